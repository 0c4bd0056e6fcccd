"""Celery's state of a run's task tells the truth about the run, in both directions.

* A run's outcome → the task's state: ``completed`` → SUCCESS with the result dict; ``failed`` and
  ``needs_review`` → FAILURE with :class:`browserq.RunFailed` carrying the same dict (an expected
  outcome: no Celery retry, no traceback — neither in the log nor in the stored FAILURE meta nor in
  the ``task-failed`` event, whose ``result`` is the dict, so Flower's Result replaces the last
  PROGRESS meta); ``cancelled`` → REVOKED. A delivery
  that lost the run to another worker stores nothing: that worker stores the outcome under the
  same task id.
* A revoke of the task → the run: ``revoke(task_id)`` of a waiting run, and
  ``revoke(task_id, terminate=True)`` (Flower's Terminate) of a running one, record the run as
  ``cancelled``. A terminate is recorded *before* Celery sends SIGTERM to the child, so the child,
  interrupted, finishes the run as cancelled rather than as a timeout.
"""

from __future__ import annotations

import uuid
from typing import Any

import structlog
from celery import Task
from celery.exceptions import Ignore
from celery.signals import task_revoked
from celery.utils.saferepr import saferepr
from celery.worker.request import Request

from browserq.errors import RunFailed
from browserq.settings import get_settings
from browserq.store import Store
from browserq.store.states import FINISHED
from browserq.tasks.app import TASK_NAME

log = structlog.get_logger(__name__)

FAILED_STATUSES = frozenset({"failed", "needs_review"})
#: A revoke is recorded by the worker's main process: never let a database outage stall it long.
REVOKE_RECORD_RETRY_WINDOW_S = 3.0


def settle(task: Task, result: Any) -> Any:
    """Return a completed run's result; raise what makes Celery record any other outcome."""
    if not isinstance(result, dict):
        return result
    status = result.get("status")
    if status == "completed":
        return result
    if status in FAILED_STATUSES:
        _mark_failed(task, result)
        raise Ignore()  # the state is stored; Celery must not overwrite it (with a traceback)
    if status == "cancelled":
        _mark_revoked(task, result)
        raise Ignore()  # the state is stored; Celery must not overwrite it
    # Not final: another worker took the run over (lease lost) and will store its outcome.
    log.info("the run continues in another worker; this delivery stores no result",
             run_id=result.get("run_id"), status=status)
    raise Ignore()


def _mark_failed(task: Task, result: dict[str, Any]) -> None:
    """FAILURE as an expected outcome: the RunFailed (its ``.result`` the dict) without a traceback,
    and a ``task-failed`` event whose ``result`` replaces the progress dict Flower showed."""
    failed = RunFailed(result)
    task.backend.mark_as_failure(task.request.id, failed, traceback=None, request=task.request)
    log.info("task raised expected: RunFailed (stored as FAILURE, no traceback)", run_id=result.get("run_id"),
             status=result.get("status"), code=failed.code, step=failed.step)
    try:
        task.send_event("task-failed", exception=saferepr(failed), traceback=None, result=saferepr(result))
    except Exception as exc:  # events are for monitors; the result backend already has the state
        log.warning("could not send the task-failed event", error=str(exc))


def _mark_revoked(task: Task, result: dict[str, Any]) -> None:
    error = result.get("error") or {}
    reason = f"run {result.get('run_id')} cancelled: {error.get('message') or 'cancelled'}"
    task.backend.mark_as_revoked(task.request.id, reason, request=task.request)
    try:
        task.send_event("task-revoked", terminated=False, signum=None, expired=False)
    except Exception as exc:  # events are for monitors; the result backend already has the state
        log.warning("could not send the task-revoked event", error=str(exc))


# --- revokes → cancelled runs (in the worker's main process) --------------------------------------
def run_id_of(kwargs: dict[str, Any] | None, task_id: str | None) -> str | None:
    """The run a task message is about: its ``run_id`` kwarg, else the one derived from the task id
    (messages sent without browserq's producer)."""
    run_id = (kwargs or {}).get("run_id")
    if run_id:
        return str(run_id)
    try:
        return uuid.UUID(str(task_id)).hex
    except ValueError:
        return None


def run_id_for(task_id: str | None) -> str:
    """The run id (32 hex) a message sent without browserq's producer gets: its task id's (Celery
    makes task ids dashed UUIDs), else a new one."""
    return run_id_of(None, task_id) or uuid.uuid4().hex


def record_revoke(run_id: str | None, reason: str) -> str | None:
    """Cancel the run (at once if waiting, else ask its worker to stop); returns its status. Never
    raises: the worker's main process must keep serving."""
    if not run_id:
        return None
    settings = get_settings()
    store = Store(settings.database_url, retry_window_s=REVOKE_RECORD_RETRY_WINDOW_S)
    try:
        run = store.runs.get_run(run_id)
        if run is None or run.status in FINISHED:
            return run.status if run else None
        view = store.cancellation.request_cancel(run_id, reason=reason)
        log.info("revoked task recorded as a cancellation", run_id=run_id, status=view.status, reason=reason)
        return view.status
    except Exception as exc:
        log.warning("could not record the revoke of a run", run_id=run_id, error=str(exc).splitlines()[0])
        return None
    finally:
        store.dispose()


class RunTemplateRequest(Request):
    """``revoke(terminate=True)``: record the cancellation first, then let Celery signal the child."""

    def terminate(self, pool: Any, signal: Any = None) -> None:
        if self.task_name == TASK_NAME:
            record_revoke(run_id_of(self.kwargs, self.id),
                          "terminated through Celery (revoke with terminate=True, e.g. Flower's Terminate)")
        super().terminate(pool, signal)


@task_revoked.connect
def _cancel_revoked_run(sender: Any = None, request: Any = None, terminated: bool = False,
                        expired: bool = False, **_: Any) -> None:
    """A revoked (or expired) run task: the run must not wait to be re-sent by the sweeper."""
    if getattr(sender, "name", None) != TASK_NAME or request is None:
        return
    why = "expired" if expired else "terminated" if terminated else "revoked"
    record_revoke(run_id_of(getattr(request, "kwargs", None), getattr(request, "id", None)),
                  f"{why} through Celery (revoke of task {getattr(request, 'id', '?')})")


__all__ = ["FAILED_STATUSES", "RunTemplateRequest", "record_revoke", "run_id_for", "run_id_of", "settle"]
