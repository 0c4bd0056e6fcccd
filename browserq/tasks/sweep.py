"""The ``browserq.sweep`` task: re-send runs nobody is executing (expired leases, lost messages).

Beat sends it on a schedule, ``browserq sweep`` calls :func:`sweep_stuck_runs` at once, and the
fleet's sweeper thread inside the workers (:mod:`browserq.execute.sweeper`) calls it every
interval while it holds the sweep lock.
"""

from __future__ import annotations

from functools import lru_cache

import structlog

from browserq.sessions.template import SESSION_TEMPLATE
from browserq.settings import Settings, get_settings
from browserq.store import RunView, Store
from browserq.store.states import HELD_VALUES
from browserq.tasks.app import SWEEP_TASK_NAME, app, time_limits
from browserq.tasks.observers import client_relay
from browserq.tasks.retention import prune_expired
from browserq.tasks.run_task import run_template
from browserq.tasks.session_task import open_session
from browserq.tasks.webhooks import relay_overdue

log = structlog.get_logger(__name__)


@lru_cache(maxsize=1)
def sweep_store() -> Store:
    """The store the sweep task reads (one per process, created on first use)."""
    settings = get_settings()
    return Store.from_settings(settings, webhook_relay=client_relay(settings))


@app.task(name=SWEEP_TASK_NAME)
def sweep() -> dict[str, int]:
    """Re-enqueue runs that nobody is executing: expired leases, lost messages (run by beat)."""
    return {"requeued": sweep_stuck_runs(sweep_store(), get_settings())}


def sweep_stuck_runs(store: Store, settings: Settings) -> int:
    """Send a fresh message for every stuck run, under the run's own task id (so the handle
    ``.delay()`` returned resolves whichever message runs it); the lease makes duplicates harmless.
    Webhook events never sent, or whose message was lost, are sent again too."""
    count = 0
    for run in store.leases.stuck_runs(queued_older_than_s=settings.requeue_after_s):
        if run.status in HELD_VALUES:  # running, or waiting for a person
            # Its lease expired (the worker stopped renewing it): the poison cap counts this.
            store.transitions.transition(run.id, "queued", reason="its worker stopped renewing the lease; re-enqueued by the sweeper")
        send_again(store, run, settings)
        count += 1
        log.info("re-enqueued stuck run", run_id=run.id, status=run.status)
    relay_overdue(store)
    prune_expired(store, settings)  # BROWSERQ_RETENTION_S: a bounded pass, nothing when unset
    return count


def send_again(store: Store, run: RunView, settings: Settings) -> None:
    """Send a fresh message for a recorded run (the sweeper's re-send, a resolved run's retry).
    A session is sent to be opened again: its next holder takes it over from its last checkpoint
    and consumes its command queue, where its client's commands wait (no client is told)."""
    if run.template_name == SESSION_TEMPLATE:
        open_session.apply_async(kwargs={"run_id": run.id}, queue=run.queue or settings.queue,
                                 task_id=run.task_id or run.id)  # its next holder goes on in the same task
        store.runs.mark_enqueued(run.id)
        return
    run_template.apply_async(
        args=[f"{run.template_name}@{run.template_version}"],
        kwargs={"run_id": run.id},
        # The producer's handle waits on this id: the re-sent run must report under it.
        task_id=run.task_id or run.id,
        queue=run.queue or settings.queue,
        **time_limits(run.timeout_s, settings, human_wait_s=run.human_wait_s or 0.0),
    )
    store.runs.mark_enqueued(run.id)


__all__ = ["send_again", "sweep", "sweep_store", "sweep_stuck_runs"]
