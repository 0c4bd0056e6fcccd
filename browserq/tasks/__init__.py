"""How a run travels: the Celery app and its config, the run task, the sweep task, worker signals.

    app.py       the Celery app, its configuration, the time limits a run message carries
    run_task.py  ``browserq.run_template``: RunTemplateTask and the worker's side of a run
    sweep.py     ``browserq.sweep``: re-send runs nobody is executing (and overdue webhooks)
    webhooks.py  ``browserq.deliver_webhook``: POST a run event, signed, with retries
    celery_states.py  the task's Celery state follows the run (and a revoke cancels the run)
    observers.py who hooks into what: run observers, meters, the store's webhook relay
    worker.py    this worker process's runtime and sweeper thread
    session_task.py  ``browserq.open_session``: a worker process takes an agent session and holds it
    signals.py   migrate before the fork, a browser per child, secrets kept out of Celery

Importing the package connects the signals: ``celery -A browserq.celery_app`` does.
"""

from browserq.tasks.app import (
    HARD_LIMIT_GRACE_S,
    SWEEP_TASK_NAME,
    TASK_NAME,
    WEBHOOK_TASK_NAME,
    app,
    celery_config,
    sweep_queue,
    time_limits,
    webhook_queue,
)
from browserq.tasks.celery_states import RunTemplateRequest, record_revoke, run_id_of, settle
from browserq.tasks.run_task import RunTemplateTask, install_admission, run_template
from browserq.tasks.session_task import SESSION_TASK_NAME, open_session, session_host
from browserq.tasks.signals import redacted_call  # importing it connects the worker signals
from browserq.tasks.sweep import sweep, sweep_stuck_runs
from browserq.tasks.webhooks import deliver_webhook, queued_relay, threaded_relay
from browserq.tasks.worker import worker_runtime

__all__ = [
    "HARD_LIMIT_GRACE_S",
    "SESSION_TASK_NAME",
    "SWEEP_TASK_NAME",
    "TASK_NAME",
    "WEBHOOK_TASK_NAME",
    "RunTemplateRequest",
    "RunTemplateTask",
    "app",
    "celery_config",
    "deliver_webhook",
    "install_admission",
    "open_session",
    "queued_relay",
    "record_revoke",
    "redacted_call",
    "run_id_of",
    "run_template",
    "session_host",
    "settle",
    "sweep",
    "sweep_queue",
    "sweep_stuck_runs",
    "threaded_relay",
    "time_limits",
    "webhook_queue",
    "worker_runtime",
]
