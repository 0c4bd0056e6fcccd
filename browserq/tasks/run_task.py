"""The ``browserq.run_template`` task: how a recorded run travels to a worker and is executed there.

The message carries only the template reference and the run id. Before a call with a template and
params is sent, the producer accepts it (resolves, validates once, records); that is
:mod:`browserq.submit`'s job, which installs itself here (:func:`install_admission`) because this
layer must not import the one above it. In the worker the task executes the run through this
process's :class:`~browserq.execute.Runtime` and turns what it returns into the task's state
(:mod:`browserq.tasks.celery_states`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from celery import Task
from celery.exceptions import Ignore

from browserq.errors import BrowserqError, ConfigError, RunFailed
from browserq.execute import (
    RetryLater,
    RunBusy,
    Runtime,
    WorkerUnusable,
    record_run,
)
from browserq.execute.admission import admit
from browserq.store import LeaseLost, StoreUnavailable
from browserq.tasks.app import TASK_NAME, app
from browserq.tasks.celery_states import run_id_for, settle
from browserq.tasks.progress import track_progress
from browserq.tasks.worker import exit_without_browser, worker_runtime

log = structlog.get_logger(__name__)

#: ``door(task, args, kwargs, options)``: accept a call that is not yet a recorded run and send it.
ProducerDoor = Callable[[Task, list[Any], dict[str, Any], dict[str, Any]], Any]
_admission: ProducerDoor | None = None


def install_admission(door: ProducerDoor) -> None:
    """Set how ``run_template.delay(template, params=…)`` accepts a run (browserq.submit does)."""
    global _admission
    _admission = door


class RunTemplateTask(Task):
    """``apply_async`` accepts the run (validated and recorded) before sending anything; the
    task's Celery state follows the run's outcome (see :mod:`browserq.tasks.celery_states`)."""

    Request = "browserq.tasks.celery_states:RunTemplateRequest"
    #: A failed run is an expected outcome: logged in one line at INFO, never with a traceback.
    throws = (RunFailed,)
    #: STARTED is published with the run's progress (:func:`~browserq.tasks.progress.track_progress`),
    #: not written by Celery's tracer before the task: there a backend write that fails (a
    #: ``celery_taskmeta`` row locked by a frozen worker, lock_timeout) failed the task unexecuted.
    track_started = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return settle(self, super().__call__(*args, **kwargs))

    def apply_async(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        args, kwargs = list(args or ()), dict(kwargs or {})
        if kwargs.get("run_id"):  # already recorded: a retry, or a re-enqueue of a stored run
            return super().apply_async(args, kwargs, **options)
        if _admission is None:
            raise ConfigError(
                "run_template needs browserq's producer to accept a run: import browserq.celery_app "
                "(or browserq.submit) before calling delay()/apply_async()"
            )
        return _admission(self, args, kwargs, options)


def _accept_unrecorded(task: Task, runtime: Runtime, template: str, params: Any) -> tuple[str, Any] | dict[str, Any]:
    """A message sent without browserq's producer (send_task, another language): validate and
    record it here. Returns ``(run_id, secrets)``, or the failed result of input it refuses."""
    try:
        settings = runtime.settings
        admission = admit(settings, template, params, registry=runtime.registry, run_id=run_id_for(task.request.id))
        prepared, notify_url = admission.prepared, admission.notify_url
        box = runtime.secret_box if runtime.secret_box.enabled else None  # so a retry has them
        record_run(runtime.store, prepared, secret_box=box, task_id=task.request.id, artifacts=runtime.artifacts,
                   notify_url=notify_url)
    except BrowserqError as exc:
        code = getattr(exc, "code", None)
        return {
            "run_id": None,
            "status": "failed",
            "outputs": {},
            "error": {"code": code.code if code else "INVALID_INPUT", "message": str(exc), "step": None},
            "warnings": [],
        }
    return prepared.run_id, prepared.secret_values


@app.task(bind=True, base=RunTemplateTask, name=TASK_NAME, max_retries=None)
def run_template(
    self: Task, template: str, params: dict[str, Any] | None = None, run_id: str | None = None
) -> dict[str, Any]:
    """Execute (or resume) one template run; returns ``{run_id, status, outputs, error}``."""
    try:
        runtime = worker_runtime()
    except ConfigError as exc:  # Chromium would not start in this process
        exit_without_browser(exc)
    secrets = None
    if run_id is None:
        accepted = _accept_unrecorded(self, runtime, template, params)
        if isinstance(accepted, dict):
            return accepted
        run_id, secrets = accepted
    structlog.contextvars.bind_contextvars(run_id=run_id, task_id=self.request.id)
    progress = track_progress(run_id, self.request)  # its steps become this task's PROGRESS
    try:
        result = runtime.execute(run_id, secrets=secrets)
    except RunBusy as busy:
        # A duplicate delivery while another worker runs it: look again when its lease would end.
        log.info("run busy elsewhere; will check again", holder=busy.holder, retry_in_s=busy.retry_in_s)
        raise self.retry(countdown=busy.retry_in_s) from None
    except WorkerUnusable as exc:
        exit_without_browser(exc)
    except LeaseLost as lost:
        _fenced_out(run_id, lost.holder, lost.status)
    except StoreUnavailable as away:
        # Nothing could be recorded: the run is tried again later through the broker alone
        # (no database write on the way) and resumes from its last checkpoint once it is back.
        wait_s = away.retry_in_s
        log.warning("waiting for the database: the run will be tried again", retry_in_s=round(wait_s, 1),
                    error=str(away)[:300])
        raise self.retry(countdown=wait_s) from None
    finally:
        progress.end()  # no PROGRESS write after this: the final state follows
        structlog.contextvars.unbind_contextvars("run_id", "task_id")
    if not isinstance(result, RetryLater) and result.lease_lost:
        _fenced_out(run_id, None, None)
    if isinstance(result, RetryLater):
        runtime.store.runs.mark_enqueued(run_id)
        raise self.retry(countdown=result.countdown_s)
    return result.as_result()


def _fenced_out(run_id: str, holder: str | None, status: str | None) -> None:
    """Another worker took the run over (our lease had expired): an expected outcome, not an
    error. One INFO line; the task's state is left alone (Ignore), since the run's task id is the
    successor's too and its result must not be overwritten by ours."""
    log.info("run taken over by another worker; this worker stopped writing to it (fenced out)",
             run_id=run_id, holder=holder, status=status)
    raise Ignore()


__all__ = ["RunTemplateTask", "install_admission", "run_template"]
