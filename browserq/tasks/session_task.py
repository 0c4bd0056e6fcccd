"""The ``browserq.open_session`` task: a worker process takes an agent session and holds it.

The task leases the session's run, opens its context and has this process consume the session's
command queue (:class:`browserq.sessions.host.SessionHost`), replies "opened" to the client and
RETURNS: an idle session holds one browser context and no Celery slot, so template runs keep
flowing through the same worker. The sweeper re-sends this task (no client waiting) for a session
whose worker was lost: the next holder takes it over from its last checkpoint.
"""

from __future__ import annotations

import threading
from typing import Any

import structlog
from celery import Task, states
from celery.exceptions import Ignore

from browserq.errors import ConfigError
from browserq.sessions.host import SessionHost
from browserq.settings import get_settings
from browserq.store import LeaseBusy
from browserq.tasks.app import app
from browserq.tasks.observers import session_watchers
from browserq.tasks.session_progress import FINAL_STATES, SessionProgress, session_progress
from browserq.tasks.worker import exit_without_browser, on_process_stop, worker_runtime

log = structlog.get_logger(__name__)

SESSION_TASK_NAME = "browserq.open_session"
#: Opening a context takes well under this; a hung open is cut by Celery.
OPEN_SOFT_LIMIT_S = 120.0

_host: SessionHost | None = None
_host_lock = threading.Lock()  # threads-pool tasks share the process's host


def session_host() -> SessionHost:
    """This process's session host, built on first use (its consumer thread with it)."""
    global _host
    with _host_lock:
        if _host is None:
            runtime = worker_runtime()
            _host = SessionHost.for_runtime(runtime, session_watchers(runtime.settings))
            on_process_stop(_stop_host)
        return _host


def _stop_host() -> None:
    global _host
    with _host_lock:
        if _host is not None:
            _host.stop()
            _host = None


# track_started=False: a duplicate delivery must not write STARTED over the state of a session
# that ended (REVOKED, FAILURE); the session's own states are published (tasks/session_progress.py).
@app.task(bind=True, name=SESSION_TASK_NAME, soft_time_limit=OPEN_SOFT_LIMIT_S,
          time_limit=OPEN_SOFT_LIMIT_S + 30, track_started=False)
def open_session(self: Task, run_id: str, reply_to: str | None = None,
                 correlation_id: str | None = None) -> dict[str, Any]:
    """Hold the session ``run_id`` in this process; replies to ``reply_to`` when a client waits."""
    try:
        host = session_host()
    except ConfigError as exc:  # Chromium would not start in this process
        exit_without_browser(exc)
    structlog.contextvars.bind_contextvars(run_id=run_id, task_id=self.request.id)
    progress = session_progress(get_settings())
    binding = progress.bind(run_id, self.request)  # before it is held: its first state is the task's
    try:
        with _host_lock:  # one open at a time per process: the capacity count stays true
            status = host.open(run_id, reply_to=reply_to, correlation_id=correlation_id)
    except LeaseBusy as busy:
        # A live worker holds it (a duplicate message): nothing to do. Should that worker be lost,
        # its lease expires and the sweeper sends the session again; a retry here would only spin
        # for the session's whole life.
        log.info("session held by another live worker; this message is dropped", holder=busy.holder)
        status = "held elsewhere"
    except BaseException:
        if binding is not None:
            progress.publisher.release(binding)
        raise
    finally:
        structlog.contextvars.unbind_contextvars("run_id", "task_id")
    if status == "opened" and binding is not None:
        # Held: the session's state is the task's (PROGRESS, then its end: tasks/session_progress.py).
        raise Ignore()
    if status in ("ended", "full"):
        _show_end(self, progress, binding, run_id)  # never a result of its own over the session's end
        raise Ignore()
    if binding is not None:
        progress.publisher.release(binding)
    if status == "held elsewhere":
        raise Ignore()  # its holder publishes the task's state
    return {"run_id": run_id, "session": status}


def _show_end(task: Task, progress: SessionProgress, binding: Any, run_id: str) -> None:
    """The session ended without being held here (it could not open, no room, or it had ended
    before: a duplicate delivery). Its task shows the run's end — unless it shows an end already
    (the holder's, with its count of commands), which is never overwritten."""
    run = worker_runtime().store.runs.get_run(run_id)
    final = FINAL_STATES.get(run.status) if run is not None else None
    shown = task.AsyncResult(task.request.id).state if binding is not None else states.SUCCESS
    if run is None or final is None or shown in states.READY_STATES:
        if binding is not None:
            progress.publisher.release(binding)
        return
    progress.publisher.finish(run_id, final, {"run_id": run_id, "kind": "session", "status": run.status,
                                              "code": run.error_code, "why": run.error_message, "commands": 0})


__all__ = ["SESSION_TASK_NAME", "open_session", "session_host"]
