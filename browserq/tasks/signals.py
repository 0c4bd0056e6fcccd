"""Worker signals: migrate before the fork, a browser per child, and secrets kept out of Celery.

* ``worker_init`` (the parent, once): upgrade the schema, so children don't race to do it; then
  freeze the heap (:mod:`browserq.heap`) before the children are forked; ``beat_init``: beat's.
* ``worker_process_init`` / ``worker_process_shutdown`` (each child): start and stop its
  Chromium and sweeper thread (:mod:`browserq.tasks.worker`).
* ``worker_ready`` / ``worker_shutdown`` (``--pool threads``: the worker process runs the tasks):
  the same for the worker process itself.
* ``worker_shutting_down`` (SIGTERM, in the parent): the ready file goes at once, and runs waiting
  for a person are handed over to another worker (:mod:`browserq.runner.drain`).
* ``task_received`` / ``task_prerun``: a ``run_template`` message sent without browserq's
  producer carries params in clear; what Flower, events and the result backend see of it has its
  secret params masked (every param when the template cannot be resolved).
* metrics and readiness (:mod:`browserq.metrics.lifecycle`): the metrics directory before the
  fork (``worker_init``), the ``/metrics`` + ``/ready`` server and the ready file from
  ``worker_ready`` to ``worker_shutdown``; each child drops the inherited socket and, exiting,
  its gauges.
* ``setup_logging``: browserq's logging set-up replaces Celery's (one format for every line);
  ``celeryd_after_setup``: in JSON mode the banner is one record.
* ``after_setup_logger``: Celery's own log lines are scrubbed of the secrets of running runs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import structlog
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    beat_init,
    celeryd_after_setup,
    celeryd_init,
    setup_logging,
    task_prerun,
    task_received,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
    worker_shutting_down,
)

from browserq import heap
from browserq.logs import configure_logging, json_stdio, scrub_handlers
from browserq.metrics import lifecycle as worker_metrics
from browserq.redact import mask
from browserq.runner import drain
from browserq.settings import get_settings
from browserq.store import Store
from browserq.tasks.app import TASK_NAME, pooled_result_engine
from browserq.tasks.celery_states import run_id_for
from browserq.tasks.sweep import sweep_stuck_runs
from browserq.tasks.worker import (
    runs_in_this_process,
    start_in_worker,
    start_process,
    stop_in_worker,
    stop_process,
)
from browserq.templates import TemplateRegistry, secret_names


@celeryd_init.connect  # before the worker's first warning (running as root)
@setup_logging.connect
def _browserq_logging(**_: Any) -> None:
    """Celery sets up no logging of its own when ``setup_logging`` has a receiver: browserq's
    one handler renders Celery's lines too (JSON or console, their real level, no prefix); in
    JSON mode whatever else the process prints is a JSON line too."""
    settings = get_settings()
    configure_logging(settings)
    if settings.log_format == "json":
        json_stdio()


@celeryd_after_setup.connect
def _banner_as_one_line(sender: Any = None, instance: Any = None, **_: Any) -> None:
    """In JSON mode the worker's banner (ASCII art and a configuration summary, printed just
    after this signal) is one ``worker starting`` record instead."""
    if instance is None or get_settings().log_format != "json":
        return
    instance.quiet = True
    app = instance.app
    structlog.get_logger(__name__).info(
        "worker starting", hostname=sender, concurrency=instance.concurrency,
        pool=getattr(instance.pool_cls, "__module__", str(instance.pool_cls)),
        transport=app.connection().as_uri(), results=app.backend.as_uri(),
        queues=sorted(app.amqp.queues.consume_from or app.amqp.queues), tasks=sorted(
            name for name in app.tasks if not name.startswith("celery.")),
    )


@worker_init.connect
def _metrics_before_fork(**_: Any) -> None:
    """Before any child exists: the directory they record metrics into, no stale ready file."""
    worker_metrics.prepare(get_settings())


@worker_init.connect
def _drain_flag_before_fork(**_: Any) -> None:
    """The flag a stopping worker raises for all its processes (children inherit it)."""
    drain.prepare()


@worker_shutting_down.connect
def _drain(**_: Any) -> None:
    """Told to stop (SIGTERM, a warm shutdown): not ready from now on, and every run waiting for a
    person is handed over to another worker (browserq.runner.drain) instead of waited out."""
    worker_metrics.draining()
    drain.request()


@worker_init.connect
def _migrate_before_fork(**_: Any) -> None:
    """Upgrade the schema once in the parent, so children don't race to do it."""
    settings = get_settings()
    configure_logging(settings)
    if settings.auto_migrate:
        Store.from_settings(settings).schema.upgrade()


@worker_init.connect
def _freeze_before_fork(**_: Any) -> None:
    """Last of the parent's start-up (connected after the migration): its heap out of the cycle
    collector's way in every child it forks (:mod:`browserq.heap`)."""
    heap.freeze_started()


@beat_init.connect
def _freeze_beat(**_: Any) -> None:
    """Beat's start-up is done: its heap out of the cycle collector's way (:mod:`browserq.heap`)."""
    heap.freeze_started()


@worker_process_init.connect
def _start_browser(**_: Any) -> None:
    worker_metrics.after_fork()
    start_process(sweep_stuck_runs)


@worker_process_shutdown.connect
def _stop_browser(**_: Any) -> None:
    stop_process()
    worker_metrics.child_exited()


@worker_ready.connect
def _serve_metrics(sender: Any = None, **_: Any) -> None:
    """The ready watch and ``/metrics`` + ``/ready``; before a threads pool's browser starts
    (connected first), so ``/ready`` answers 503 meanwhile."""
    pool = getattr(sender, "pool", None)
    controller = getattr(sender, "controller", None)
    processes = 1 if runs_in_this_process(pool) else getattr(controller, "concurrency", None)
    worker_metrics.serve(sender.app, processes)


@worker_ready.connect
def _start_threads_runtime(sender: Any = None, **_: Any) -> None:
    start_in_worker(getattr(sender, "pool", None), sweep_stuck_runs)


@worker_shutdown.connect
def _stop_threads_runtime(**_: Any) -> None:
    stop_in_worker()


@worker_shutdown.connect
def _stop_metrics(**_: Any) -> None:
    """After the processes stopped: no endpoint, no ready file, no markers."""
    worker_metrics.shutdown()


# --- params sent without the producer (send_task): never shown or stored in clear -------------
@lru_cache(maxsize=1)
def template_registry() -> TemplateRegistry:
    """Template lookup only (no store, no browser): also used in the worker's parent process."""
    return TemplateRegistry.from_settings(get_settings())


def redacted_call(args: Any, kwargs: Any, task_id: str | None) -> tuple[list[Any], dict[str, Any]]:
    """What may be shown (Flower, events) or stored (the result backend, ``result_extended``) of a
    ``run_template`` call made without browserq's producer: secret params masked — every param
    when the template cannot be resolved — and ``run_id`` set, so a retry of the task (which
    re-sends these arguments) continues the recorded run instead of validating masks as input."""
    args, kwargs = list(args or ()), dict(kwargs or {})
    if kwargs.get("run_id"):
        return args, kwargs  # browserq's own messages: a run id, no params
    params = args[1] if len(args) > 1 else kwargs.get("params")
    if not isinstance(params, dict) or not params:
        return args, kwargs
    template = args[0] if args else kwargs.get("template")
    try:
        names: set[str] | None = secret_names(template_registry().resolve(str(template).strip()).template)
    except Exception:
        names = None  # unknown template: mask everything
    redacted = {k: (mask(k) if names is None or k in names else v) for k, v in params.items()}
    if len(args) > 1:
        args[1] = redacted
    else:
        kwargs["params"] = redacted
    kwargs["run_id"] = run_id_for(task_id)
    return args, kwargs


@task_received.connect
def _redact_received(request: Any = None, **_: Any) -> None:
    """Before the ``task-received`` event (Flower's args view) is sent from the worker's parent."""
    if request is None or getattr(request, "name", None) != TASK_NAME or (request.kwargs or {}).get("run_id"):
        return  # browserq's producer already sent a redacted kwargsrepr
    args, kwargs = redacted_call(request.args, request.kwargs, request.id)
    request._argsrepr, request._kwargsrepr = repr(args), repr(kwargs)


@task_prerun.connect
def _pool_result_connections(task: Any = None, **_: Any) -> None:
    """The thread running a task stores its states through one pooled engine (celery#3032)."""
    if task is not None:
        pooled_result_engine(task.app)


@task_prerun.connect
def _redact_request(task: Any = None, task_id: str | None = None, **_: Any) -> None:
    """Before the STARTED state is stored: the task request that every state written to the result
    backend (and ``self.retry``) reads holds masked params; the task itself still gets the real
    ones (Celery calls it with its own reference to the original kwargs)."""
    if task is None or getattr(task, "name", None) != TASK_NAME:
        return
    request = task.request
    request.args, request.kwargs = redacted_call(request.args, request.kwargs, task_id)


@after_setup_logger.connect
@after_setup_task_logger.connect
def _scrub_celery_logs(logger: Any = None, **_: Any) -> None:
    """Celery's own log lines (and the stdout/stderr it redirects) are scrubbed of running secrets."""
    scrub_handlers()
    if logger is not None:
        scrub_handlers(logger)


__all__ = ["redacted_call", "template_registry"]
