"""The Celery app and the ``browserq.run_template`` task.

Producers call ``run_template.delay("quotes@1.2", params={...})``. Before anything is sent, the
producer resolves the template, validates the params and records the run (secret params encrypted),
so bad input raises in the caller's process and nothing is enqueued. The message carries only the
template reference and the run id; the worker reads everything else from the store.

Worker processes each own one Chromium, started in ``worker_process_init`` — after the fork,
never in the parent — and closed in ``worker_process_shutdown``.
"""

from __future__ import annotations

import uuid
from functools import lru_cache
from typing import Any

import structlog
from celery import Celery, Task
from celery.signals import worker_init, worker_process_init, worker_process_shutdown
from kombu.exceptions import OperationalError as KombuOperationalError

from browserq.errors import BrokerUnavailable, BrowserqError
from browserq.logs import configure_logging
from browserq.runs import prepare_run, record_run
from browserq.runtime import Runtime
from browserq.secrets import SecretBox
from browserq.settings import Settings, get_settings
from browserq.store import Store
from browserq.templates import TemplateRegistry

log = structlog.get_logger(__name__)

TASK_NAME = "browserq.run_template"
#: Seconds between Celery's soft limit (the run is interrupted and recorded) and the hard kill.
HARD_LIMIT_GRACE_S = 30


def celery_config(settings: Settings) -> dict[str, Any]:
    """Celery settings derived from browserq's; see docs in README ("Celery settings we rely on")."""
    return {
        "broker_url": settings.broker_url,
        "result_backend": settings.effective_result_backend,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_default_queue": settings.queue,
        # Durability: ack after the run, requeue when the worker process dies, one task per child.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        # Redis redelivers unacked messages after this, even while they still run (celery#5935):
        # keep it far above the longest run.
        "broker_transport_options": {"visibility_timeout": 6 * 3600},
        # Flower: task events, started state, args of the (redacted) request.
        "worker_send_task_events": True,
        "task_send_sent_event": True,
        "task_track_started": True,
        "result_extended": True,
        "result_expires": 7 * 24 * 3600,
        # The browser launch happens in worker_process_init: give it time.
        "worker_proc_alive_timeout": 90,
        "broker_connection_retry_on_startup": True,
        # A producer facing a dead broker fails within seconds instead of hanging.
        "task_publish_retry_policy": {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
        "broker_connection_timeout": 4,
        "worker_hijack_root_logger": False,
    }


app = Celery("browserq", set_as_current=False)
app.add_defaults(lambda: celery_config(get_settings()))


@lru_cache(maxsize=1)
def _producer_services() -> tuple[TemplateRegistry, Store, SecretBox]:
    settings = get_settings()
    registry = TemplateRegistry(
        settings.templates_dir,
        max_selector_length=settings.max_selector_length,
        max_repeat=settings.max_repeat,
    )
    store = Store.from_settings(settings)
    if settings.auto_migrate:
        store.upgrade()
    return registry, store, SecretBox(settings.secret_key)


def reset_producer_cache() -> None:
    """Forget the producer's registry and store (after settings change, in tests)."""
    _producer_services.cache_clear()


class RunTemplateTask(Task):
    """``apply_async`` validates and records the run before sending anything."""

    def apply_async(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:  # type: ignore[override]
        args, kwargs = list(args or ()), dict(kwargs or {})
        if kwargs.get("run_id"):  # already recorded: a retry, or a re-enqueue of a stored run
            return super().apply_async(args, kwargs, **options)
        template = args.pop(0) if args else kwargs.pop("template", None)
        params = args.pop(0) if args else kwargs.pop("params", None)
        if args or kwargs:
            unexpected = ", ".join([*map(repr, args), *kwargs])
            raise TypeError(f"run_template(template, params=None) got unexpected arguments: {unexpected}")
        registry, store, secret_box = _producer_services()
        prepared = prepare_run(registry, template, params)
        settings = get_settings()
        queue = options.get("queue") or settings.queue
        record_run(store, prepared, secret_box=secret_box, task_id=prepared.run_id, queue=queue)
        soft_limit = prepared.loaded.template.settings.timeout_s + settings.run_time_limit_margin_s
        options.setdefault("soft_time_limit", soft_limit)
        options.setdefault("time_limit", soft_limit + HARD_LIMIT_GRACE_S)
        options["task_id"] = prepared.run_id
        options["queue"] = queue
        options["argsrepr"] = repr([prepared.loaded.ref])
        options["kwargsrepr"] = repr({"params": prepared.redacted_params, "run_id": prepared.run_id})
        try:
            return super().apply_async([prepared.loaded.ref], {"run_id": prepared.run_id}, **options)
        except KombuOperationalError as exc:
            store.delete_run(prepared.run_id)
            url = _masked(settings.broker_url)
            raise BrokerUnavailable(
                f"could not send the run to the broker at {url}: {exc}. Is the broker running? "
                "(set BROWSERQ_BROKER_URL)"
            ) from exc


def _run_id_for(task_id: str | None) -> str:
    """A run id (32 hex) for a task id, which Celery makes a dashed UUID."""
    try:
        return uuid.UUID(str(task_id)).hex
    except ValueError:
        return uuid.uuid4().hex


def _masked(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - not an URL SQLAlchemy can parse
        return url.split("@")[-1]


# --- per-process runtime -------------------------------------------------------------------
_runtime: Runtime | None = None


def worker_runtime() -> Runtime:
    """This process's runtime; started lazily for pools that send no process signals (solo)."""
    global _runtime
    if _runtime is None:
        _runtime = Runtime(get_settings()).start()
    return _runtime


@worker_init.connect
def _migrate_before_fork(**_: Any) -> None:
    """Upgrade the schema once in the parent, so children don't race to do it."""
    settings = get_settings()
    configure_logging(settings)
    if settings.auto_migrate:
        Store.from_settings(settings).upgrade()


@worker_process_init.connect
def _start_browser(**_: Any) -> None:
    global _runtime
    settings = get_settings()
    configure_logging(settings)
    _runtime = Runtime(settings.model_copy(update={"auto_migrate": False})).start()


@worker_process_shutdown.connect
def _stop_browser(**_: Any) -> None:
    global _runtime
    if _runtime is not None:
        _runtime.stop()
        _runtime = None


@app.task(bind=True, base=RunTemplateTask, name=TASK_NAME)
def run_template(self: Task, template: str, params: dict[str, Any] | None = None, run_id: str | None = None) -> dict[str, Any]:
    """Execute one template run; returns ``{run_id, status, outputs, error}``."""
    runtime = worker_runtime()
    secrets = None
    if run_id is None:
        # Sent without browserq's producer (send_task, another language): validate here.
        try:
            prepared = prepare_run(runtime.registry, template, params, run_id=_run_id_for(self.request.id))
            record_run(runtime.store, prepared, secret_box=None, task_id=self.request.id)
        except BrowserqError as exc:
            code = getattr(exc, "code", None)
            return {
                "run_id": None,
                "status": "failed",
                "outputs": {},
                "error": {"code": code.code if code else "INVALID_INPUT", "message": str(exc), "step": None},
            }
        run_id, secrets = prepared.run_id, prepared.secret_values
    structlog.contextvars.bind_contextvars(run_id=run_id, task_id=self.request.id)
    try:
        return runtime.execute(run_id, secrets=secrets).as_result()
    finally:
        structlog.contextvars.unbind_contextvars("run_id", "task_id")
