"""Where a store's webhook events go and who is told of them: handed to the store when it is built.

The store writes an event row with the status change it reports (:mod:`browserq.store.webhooks`);
once that transaction commits it hands the new delivery ids to its relay's ``send`` (the Celery
relay of :mod:`browserq.tasks.webhooks`, chosen in :mod:`browserq.tasks.observers`). A store built
without one sends nothing itself: the next sweep does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from browserq.store.store import Store

#: Told ``(store, delivery ids)`` after the transaction that queued them committed.
SendDeliveries = Callable[["Store", list[int]], None]


@dataclass(frozen=True, slots=True)
class WebhookRelay:
    """``fleet_notify_url``: where the events of a run without a notify URL of its own go when
    this process records them (``BROWSERQ_NOTIFY_URL``), pinned on the run at its first event.
    ``send``: who sends new deliveries at once (None: the next sweep sends them)."""

    fleet_notify_url: str | None = None
    send: SendDeliveries | None = None


#: A store that relays nothing and knows no fleet-wide URL (the delivery task's, the sweeper's, …).
NO_RELAY = WebhookRelay()

__all__ = ["NO_RELAY", "SendDeliveries", "WebhookRelay"]
