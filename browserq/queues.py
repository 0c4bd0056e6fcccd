"""The queues a browserq worker consumes besides its runs' queue, named from the settings alone.

A leaf module: ``browserq worker`` builds Celery's command line from these names before it hands
its process over to Celery, and must not import the task package (the store, the runtime) only to
name two queues — Celery imports all of that once, after the exec.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from browserq.settings import Settings


def sweep_queue(settings: Settings) -> str:
    """The queue of the sweeper task; ``browserq worker`` consumes it next to the runs' queue."""
    return f"{settings.queue}.sweep"


def webhook_queue(settings: Settings) -> str:
    """The queue of webhook deliveries; ``browserq worker`` consumes it next to the runs' queue
    (a POST never waits behind a backlog of runs; a light worker may take only this queue)."""
    return f"{settings.queue}.webhooks"


__all__ = ["sweep_queue", "webhook_queue"]
