"""An agent session's progress in Flower and ``AsyncResult(session_id)``: its open task's state.

The session's open task (``browserq.open_session``, task id = the session's run id) binds the run
to itself before the session is held and returns without a result of its own (Celery's SUCCESS
would say the session is over while it has just begun). From then on this watcher publishes,
through the process's :class:`~browserq.tasks.progress.ProgressPublisher` (its thread, coalesced
and throttled like a run's steps), ``PROGRESS`` with::

    {run_id, kind: "session", status: "open", commands, epoch, url,
     last: {action, outcome, duration_ms} | None, idle_since, held_since, takeover}

(``commands``: messages this holder answered; ``outcome``: ``ok``, an error code or ``closed``;
``url`` redacted; never a value a command carried or got). When the session ends, its run's
status becomes the task's last state, with ``{run_id, kind, status, code, why, commands}``:
``completed`` → SUCCESS, ``failed`` → FAILURE (:class:`browserq.RunFailed`), ``cancelled``
(closed idle, past its lifetime, cancelled) → REVOKED, each with the event Flower takes it from.
A session lost to another worker publishes nothing more here: its next holder goes on under the
same task id.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from celery import states

from browserq.session_events import CommandAnswered, SessionHeld, SessionLetGo, SessionWatcher
from browserq.settings import Settings
from browserq.tasks.progress import ProgressPublisher, progress_observer

SESSION = "session"
FINAL_STATES = {"completed": states.SUCCESS, "failed": states.FAILURE, "cancelled": states.REVOKED}


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


class SessionProgress(SessionWatcher):
    """Publishes each bound session's state as its open task's (see the module's doc)."""

    def __init__(self, publisher: ProgressPublisher) -> None:
        self.publisher = publisher
        self._held: dict[str, dict[str, Any]] = {}  # run id -> its last meta

    def bind(self, run_id: str, request: Any) -> Any:
        """The open task, before it holds ``run_id``: its task is the session's from now on."""
        task_id = getattr(request, "id", None)
        if not task_id:
            return None
        return self.publisher.bind(run_id, task_id, request, getattr(request, "hostname", None), kind=SESSION)

    def held(self, event: SessionHeld) -> None:
        meta = {"run_id": event.run_id, "kind": SESSION, "status": "open", "commands": 0, "epoch": event.epoch,
                "url": None, "last": None, "idle_since": _iso(event.at), "held_since": _iso(event.at),
                "takeover": event.takeover}
        self._held[event.run_id] = meta
        self.publisher.publish(event.run_id, meta, kind=SESSION, at_once=True)

    def answered(self, event: CommandAnswered) -> None:
        before = self._held.get(event.run_id)
        if before is None:
            return
        meta = {**before, "commands": event.done, "epoch": event.epoch, "url": event.url,
                "last": {"action": event.action, "outcome": event.outcome,
                         "duration_ms": round(event.duration_s * 1000, 1)},
                "idle_since": _iso(event.at)}
        self._held[event.run_id] = meta
        self.publisher.publish(event.run_id, meta, kind=SESSION)

    def let_go(self, event: SessionLetGo) -> None:
        self._held.pop(event.run_id, None)
        final = FINAL_STATES.get(event.status)
        if final is None:  # lost to another worker: it publishes from now on
            self.publisher.drop(event.run_id)
            return
        self.publisher.finish(event.run_id, final, {
            "run_id": event.run_id, "kind": SESSION, "status": event.status, "code": event.code,
            "why": event.why, "commands": event.done})


_progress: SessionProgress | None = None
_progress_lock = threading.Lock()


def session_progress(settings: Settings) -> SessionProgress:
    """This process's session progress (one per process: the open task binds sessions to it)."""
    global _progress
    with _progress_lock:
        if _progress is None:
            _progress = SessionProgress(progress_observer(settings))
        return _progress


__all__ = ["FINAL_STATES", "SessionProgress", "session_progress"]
