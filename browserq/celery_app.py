"""The Celery app and the ``browserq.run_template`` task.

Producers call ``run_template.delay("quotes@1.2", params={...})``. Before anything is sent, the
producer resolves the template, validates the params and records the run (secret params encrypted),
so bad input raises in the caller's process and nothing is enqueued. The message carries only the
template reference and the run id; the worker reads everything else from the store.

Worker processes each own one Chromium, started in ``worker_process_init`` — after the fork,
never in the parent — and closed in ``worker_process_shutdown``.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from functools import lru_cache
from typing import Any, NoReturn

import structlog
from celery import Celery, Task
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    task_prerun,
    task_received,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
)
from kombu.exceptions import OperationalError as KombuOperationalError

from browserq.errors import BrokerUnavailable, BrowserqError, ConfigError, ParamError, RunFailed
from browserq.logs import configure_logging, scrub_handlers
from browserq.redact import mask
from browserq.runs import PreparedRun, check_run_options, prepare_run, record_run
from browserq.runtime import RetryLater, RunBusy, Runtime, WorkerUnusable
from browserq.secrets import SecretBox
from browserq.settings import Settings, get_settings
from browserq.store import DuplicateRun, Store
from browserq.sweeper import FleetSweeper
from browserq.task_states import settle
from browserq.templates import TemplateRegistry, render, secret_names

log = structlog.get_logger(__name__)

TASK_NAME = "browserq.run_template"
SWEEP_TASK_NAME = "browserq.sweep"
#: Seconds between Celery's soft limit (the run is interrupted and recorded) and the hard kill.
HARD_LIMIT_GRACE_S = 30
#: Exit status of a worker process that has no usable browser (EX_SOFTWARE).
EXIT_NO_BROWSER = 70
#: How long such a process waits before it exits.
NO_BROWSER_PAUSE_S = 2.0


def sweep_queue(settings: Settings) -> str:
    """The queue of the sweeper task; ``browserq worker`` consumes it next to the runs' queue."""
    return f"{settings.queue}.sweep"


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
        # The sweeper: re-enqueues runs whose worker vanished or whose message was lost.
        # On its own queue, so a sweep never waits behind a backlog of runs (the backlog may be
        # what it has to rescue); a sweep not taken within one interval is dropped.
        "task_routes": {SWEEP_TASK_NAME: {"queue": sweep_queue(settings)}},
        "beat_schedule": {
            "browserq-sweep": {
                "task": SWEEP_TASK_NAME,
                "schedule": settings.sweep_interval_s,
                "options": {"expires": settings.sweep_interval_s},
            },
        },
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
    _registry.cache_clear()


class RunTemplateTask(Task):
    """``apply_async`` validates and records the run before sending anything; the task's Celery
    state follows the run's outcome (see :mod:`browserq.task_states`)."""

    Request = "browserq.task_states:RunTemplateRequest"
    #: A failed run is an expected outcome: logged in one line at INFO, never with a traceback.
    throws = (RunFailed,)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return settle(self, super().__call__(*args, **kwargs))

    def apply_async(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:  # type: ignore[override]
        args, kwargs = list(args or ()), dict(kwargs or {})
        if kwargs.get("run_id"):  # already recorded: a retry, or a re-enqueue of a stored run
            return super().apply_async(args, kwargs, **options)
        template = args.pop(0) if args else kwargs.pop("template", None)
        params = args.pop(0) if args else kwargs.pop("params", None)
        idempotency_key = kwargs.pop("idempotency_key", None)
        identity = kwargs.pop("identity", None)
        identity_pool = kwargs.pop("identity_pool", None)
        tenant = kwargs.pop("tenant", None)
        if args or kwargs:
            unexpected = ", ".join([*map(repr, args), *kwargs])
            raise TypeError(
                "run_template(template, params=None, idempotency_key=None, identity=None, "
                "identity_pool=None, tenant=None) got unexpected "
                f"arguments: {unexpected}"
            )
        registry, store, secret_box = _producer_services()
        settings = get_settings()
        prepared = prepare_run(registry, template, params, max_params_bytes=settings.max_params_bytes)
        check_run_options(prepared.loaded.ref, idempotency_key=idempotency_key, identity=identity,
                          identity_pool=identity_pool, tenant=tenant)
        queue = options.get("queue") or settings.queue
        key = idempotency_key_for(prepared, idempotency_key)
        if key is not None:
            existing = store.find_run_by_idempotency_key(key)
            if existing is not None:
                return self.AsyncResult(existing.id)  # joins the run already submitted
        check_identity_request(store, secret_box, identity, identity_pool)
        try:
            record_run(store, prepared, secret_box=secret_box, task_id=prepared.run_id, queue=queue,
                       idempotency_key=key, identity=identity, identity_pool=identity_pool, tenant=tenant)
        except DuplicateRun as duplicate:  # another producer won the race for this key
            return self.AsyncResult(duplicate.existing_run_id)
        soft_limit = prepared.loaded.template.settings.timeout_s + settings.run_time_limit_margin_s
        options.setdefault("soft_time_limit", soft_limit)
        options.setdefault("time_limit", soft_limit + HARD_LIMIT_GRACE_S)
        options["task_id"] = prepared.run_id
        options["queue"] = queue
        options["argsrepr"] = repr([prepared.loaded.ref])
        options["kwargsrepr"] = repr({"params": prepared.redacted_params, "run_id": prepared.run_id})
        try:
            result = super().apply_async([prepared.loaded.ref], {"run_id": prepared.run_id}, **options)
            store.mark_enqueued(prepared.run_id)
            return result
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
    except Exception:
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


_sweeper: FleetSweeper | None = None


@worker_process_init.connect
def _start_browser(**_: Any) -> None:
    global _runtime
    settings = get_settings()
    configure_logging(settings)
    try:
        _runtime = Runtime(settings.model_copy(update={"auto_migrate": False})).start()
    except ConfigError as exc:  # the first task tries again, and makes way if it still fails
        log.error("browser did not start in this worker process", error=str(exc)[:300])
        _runtime = None
    if _runtime is not None:
        _start_sweeper(settings, _runtime.owner)


def _start_sweeper(settings: Settings, owner: str) -> None:
    """Nothing-lost must not depend on beat: every worker process competes for the fleet's sweep
    lock, and its holder sweeps (see :mod:`browserq.sweeper`)."""
    global _sweeper
    if settings.sweep_in_workers and _sweeper is None:
        _sweeper = FleetSweeper(settings, sweep_stuck_runs, owner=owner).start()


@worker_process_shutdown.connect
def _stop_browser(**_: Any) -> None:
    global _runtime, _sweeper
    if _sweeper is not None:
        _sweeper.stop()
        _sweeper = None
    if _runtime is not None:
        _runtime.stop()
        _runtime = None


@app.task(bind=True, base=RunTemplateTask, name=TASK_NAME, max_retries=None)
def run_template(
    self: Task, template: str, params: dict[str, Any] | None = None, run_id: str | None = None
) -> dict[str, Any]:
    """Execute (or resume) one template run; returns ``{run_id, status, outputs, error}``."""
    try:
        runtime = worker_runtime()
    except ConfigError as exc:  # Chromium would not start in this process
        _exit_without_browser(exc)
    secrets = None
    if run_id is None:
        # Sent without browserq's producer (send_task, another language): validate here.
        try:
            prepared = prepare_run(runtime.registry, template, params, run_id=_run_id_for(self.request.id))
            box = runtime.secret_box if runtime.secret_box.enabled else None  # so a retry has them
            record_run(runtime.store, prepared, secret_box=box, task_id=self.request.id)
        except BrowserqError as exc:
            code = getattr(exc, "code", None)
            return {
                "run_id": None,
                "status": "failed",
                "outputs": {},
                "error": {"code": code.code if code else "INVALID_INPUT", "message": str(exc), "step": None},
                "warnings": [],
            }
        run_id, secrets = prepared.run_id, prepared.secret_values
    structlog.contextvars.bind_contextvars(run_id=run_id, task_id=self.request.id)
    try:
        result = runtime.execute(run_id, secrets=secrets)
    except RunBusy as busy:
        # A duplicate delivery while another worker runs it: look again when its lease would end.
        log.info("run busy elsewhere; will check again", holder=busy.holder, retry_in_s=busy.retry_in_s)
        raise self.retry(countdown=busy.retry_in_s) from None
    except WorkerUnusable as exc:
        _exit_without_browser(exc)
    finally:
        structlog.contextvars.unbind_contextvars("run_id", "task_id")
    if isinstance(result, RetryLater):
        runtime.store.mark_enqueued(run_id)
        raise self.retry(countdown=result.countdown_s)
    return result.as_result()


# --- params sent without the producer (send_task): never shown or stored in clear -------------
@lru_cache(maxsize=1)
def _registry() -> TemplateRegistry:
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
        names: set[str] | None = secret_names(_registry().resolve(str(template).strip()).template)
    except Exception:
        names = None  # unknown template: mask everything
    redacted = {k: (mask(k) if names is None or k in names else v) for k, v in params.items()}
    if len(args) > 1:
        args[1] = redacted
    else:
        kwargs["params"] = redacted
    kwargs["run_id"] = _run_id_for(task_id)
    return args, kwargs


@task_received.connect
def _redact_received(request: Any = None, **_: Any) -> None:
    """Before the ``task-received`` event (Flower's args view) is sent from the worker's parent."""
    if request is None or getattr(request, "name", None) != TASK_NAME or (request.kwargs or {}).get("run_id"):
        return  # browserq's producer already sent a redacted kwargsrepr
    args, kwargs = redacted_call(request.args, request.kwargs, request.id)
    request._argsrepr, request._kwargsrepr = repr(args), repr(kwargs)


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
def _exit_without_browser(exc: BaseException) -> NoReturn:
    """No working browser in this process: leave, so the prefork pool starts a fresh child.

    The message is requeued (a lost worker, ``task_reject_on_worker_lost``) and the run, handed
    back or never started, is executed by another process: no run is failed for it.
    """
    global _runtime
    log.error("exiting: this worker process has no usable browser", error=str(exc)[:300])
    if _runtime is not None:
        try:
            _runtime.stop()
        except Exception as stop_error:
            log.warning("runtime stop failed", error=str(stop_error)[:200])
        _runtime = None
    time.sleep(NO_BROWSER_PAUSE_S)  # a host that cannot start Chromium must not spin
    raise SystemExit(EXIT_NO_BROWSER) from exc


@app.task(name=SWEEP_TASK_NAME)
def sweep() -> dict[str, int]:
    """Re-enqueue runs that nobody is executing: expired leases, lost messages (run by beat)."""
    settings = get_settings()
    _registry, store, _box = _producer_services()
    return {"requeued": sweep_stuck_runs(store, settings)}


def sweep_stuck_runs(store: Store, settings: Settings) -> int:
    """Send a fresh message for every stuck run, under the run's own task id (so the handle
    ``.delay()`` returned resolves whichever message runs it); the lease makes duplicates harmless."""
    count = 0
    for run in store.stuck_runs(queued_older_than_s=settings.requeue_after_s):
        if run.status == "running":
            # Its worker died: the store counts this towards the poison cap like a takeover.
            store.transition(run.id, "queued", reason="its worker stopped renewing the lease; re-enqueued by the sweeper")
        run_template.apply_async(
            args=[f"{run.template_name}@{run.template_version}"],
            kwargs={"run_id": run.id},
            # The producer's handle waits on this id: the re-sent run must report under it.
            task_id=run.task_id or run.id,
            queue=run.queue or settings.queue,
            soft_time_limit=run.timeout_s + settings.run_time_limit_margin_s,
            time_limit=run.timeout_s + settings.run_time_limit_margin_s + HARD_LIMIT_GRACE_S,
        )
        store.mark_enqueued(run.id)
        count += 1
        log.info("re-enqueued stuck run", run_id=run.id, status=run.status)
    return count


def check_identity_request(
    store: Store, secret_box: SecretBox, identity: str | None, identity_pool: str | None
) -> None:
    """Fail at the producer, not in a worker: one of the two, a key to encrypt its storage, and a
    pool that has identities. A named identity is created on first use."""
    if identity is None and identity_pool is None:
        return
    if identity is not None and identity_pool is not None:
        raise ConfigError("ask for an identity by name or from a pool, not both")
    if not secret_box.enabled:
        raise ConfigError(
            "identities keep their browser storage encrypted at rest: set BROWSERQ_SECRET_KEY "
            "(generate one with `browserq keygen`)"
        )
    if identity is not None:
        store.upsert_identity(name=identity)
    elif not store.list_identities(pool=identity_pool):
        raise ConfigError(
            f"identity pool {identity_pool!r} has no identities; add some with "
            f"`browserq identities add NAME --pool {identity_pool}`"
        )


def idempotency_key_for(prepared: PreparedRun, explicit: str | None) -> str | None:
    """The caller's key, else the template's ``settings.idempotency_key`` rendered from params."""
    if explicit is not None:
        if not isinstance(explicit, str) or not explicit.strip() or len(explicit) > 150:
            raise ParamError(prepared.loaded.ref, ["idempotency_key must be a non-empty string of at most 150 characters"])
        return explicit
    pattern = prepared.loaded.template.settings.idempotency_key
    if not pattern:
        return None
    rendered = render(pattern, prepared.params)
    return f"{prepared.loaded.name}:{hashlib.sha256(str(rendered).encode()).hexdigest()[:40]}"


def cancel_run(run_id: str, reason: str = "cancelled by request") -> str:
    """Cancel a queued or running run; returns the status it has now (``cancelled``, or
    ``running`` until its worker notices within a lease renewal)."""
    _registry, store, _box = _producer_services()
    view = store.request_cancel(run_id, reason=reason)
    return view.status
