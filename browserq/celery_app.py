"""The Celery app and the ``browserq.run_template`` task: what ``celery -A browserq.celery_app`` loads.

Producers call ``run_template.delay("quotes@1.2", params={...})``: the run is accepted (resolved,
validated, recorded) in the caller's process before anything is sent (:mod:`browserq.submit`);
the message travels to a worker (:mod:`browserq.tasks`), which executes it durably
(:mod:`browserq.execute`). This module puts the three together and re-exports their public names.
"""

from __future__ import annotations

from browserq.execute import check_identity_request
from browserq.submit import cancel_run, idempotency_key_for, producer_services, reset_producer_cache
from browserq.tasks import (
    HARD_LIMIT_GRACE_S,
    SWEEP_TASK_NAME,
    TASK_NAME,
    RunTemplateTask,
    app,
    celery_config,
    redacted_call,
    run_template,
    sweep,
    sweep_queue,
    sweep_stuck_runs,
    time_limits,
    worker_runtime,
)
from browserq.tasks.worker import EXIT_NO_BROWSER, NO_BROWSER_PAUSE_S

__all__ = [
    "EXIT_NO_BROWSER",
    "HARD_LIMIT_GRACE_S",
    "NO_BROWSER_PAUSE_S",
    "SWEEP_TASK_NAME",
    "TASK_NAME",
    "RunTemplateTask",
    "app",
    "cancel_run",
    "celery_config",
    "check_identity_request",
    "idempotency_key_for",
    "producer_services",
    "redacted_call",
    "reset_producer_cache",
    "run_template",
    "sweep",
    "sweep_queue",
    "sweep_stuck_runs",
    "time_limits",
    "worker_runtime",
]
