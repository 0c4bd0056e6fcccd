"""Everything one process needs to execute runs, behind a synchronous façade.

A :class:`Runtime` owns the event-loop thread, the browser pool, the store and the artifact
directory. Celery workers build one per prefork child (after the fork); the CLI builds one
in-process. Both then call :meth:`Runtime.execute` with a recorded run's id.

``execute`` is where durability is decided: it takes the run's lease (so a duplicate delivery
cannot run it twice at once), marks steps a dead worker left unfinished, resumes from the last
checkpoint, and chooses between finishing the run, resuming at once (the browser died) and a
run-level retry with backoff.
"""

from __future__ import annotations

import os
import random
import socket
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import structlog

from browserq.browsers import BrowserPool, EventLoopThread
from browserq.errors import BrowserqError, Codes, ConfigError, ErrorClass, StoreError, TemplateError
from browserq.limits import RateLimiter, TenantBusy, TenantLimiter
from browserq.proxies import ProxyManager
from browserq.recordable import clean_text, sized
from browserq.redact import mask
from browserq.runner import RunOutcome, RunRequest, StepListener, TemplateRunner
from browserq.runner.checkpoint import Checkpoint, parse_path
from browserq.runner.translate import first_line
from browserq.runs import PreparedRun, check_run_options, prepare_loaded, prepare_run, record_run
from browserq.secrets import SecretBox
from browserq.settings import Settings, get_settings
from browserq.store import (
    ArtifactDir,
    IdentityBusy,
    IdentityDisabled,
    IdentityNotFound,
    IllegalTransition,
    LeaseBusy,
    LeaseLost,
    RunAlreadyFinished,
    RunView,
    Store,
    StoreUnavailable,
)
from browserq.templates import (
    LoadedTemplate,
    RepeatStep,
    TemplateRegistry,
    load_template_text,
    secret_names,
)

log = structlog.get_logger(__name__)

FINISHED_STATUSES = frozenset({"completed", "failed", "cancelled", "needs_review"})
BROWSER_START_TIMEOUT_S = 60.0
#: Resumes in the same process after the browser died, per execute() call.
MAX_IN_PROCESS_RESUMES = 3
#: Executions of one run that may crash (an exception, not a step failure) before it fails
#: EXECUTION_CRASHED: the first crash is retried later, the second ends the run.
MAX_EXECUTION_CRASHES = 2
#: The reason that marks a crashed execution in run_transitions (counted there: no extra column).
CRASH_REASON = "execution crashed"


class RunBusy(BrowserqError):
    """Another live worker holds this run's lease (a duplicate delivery): try again later."""

    def __init__(self, run_id: str, holder: str, retry_in_s: float) -> None:
        self.run_id, self.holder, self.retry_in_s = run_id, holder, retry_in_s
        super().__init__(f"run {run_id} is being executed by {holder}; retry in {retry_in_s:.0f} s")


class WorkerUnusable(BrowserqError):
    """This process has no working browser and cannot get one: it must exit so its supervisor
    (Celery's prefork pool) starts a fresh process. The run was handed back (``retrying``, lease
    released), so another process resumes it."""


@dataclass(frozen=True)
class RetryLater:
    """A run-level failure with retries left: the run is ``retrying`` until ``countdown_s``."""

    outcome: RunOutcome
    countdown_s: float


def _process_start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def worker_name() -> str:
    """``host:pid:start``: unique per process, and checkable for liveness on the same host."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_process_start_time(pid) or '0'}"


def holder_dead(owner: str) -> bool:
    """True when a lease holder is a process on this host that no longer exists.

    Lets a redelivered run be taken over at once after its worker was killed, instead of waiting
    for the lease to expire; holders on other hosts are never judged (their lease must expire).
    """
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    current = _process_start_time(int(pid_text))
    return current is None or (start not in ("", "0") and current != start)


class Runtime:
    def __init__(self, settings: Settings | None = None, *, listener: StepListener | None = None) -> None:
        self.settings = settings or get_settings()
        self.store = Store.from_settings(self.settings)
        self.artifacts = ArtifactDir(self.settings.artifacts_dir)
        self.registry = TemplateRegistry(
            self.settings.templates_dir,
            max_selector_length=self.settings.max_selector_length,
            max_repeat=self.settings.max_repeat,
        )
        self.secret_box = SecretBox(self.settings.secret_key)
        #: Encrypts checkpoints of runs with secrets: the real key, else one only this process has.
        self.checkpoint_box = self.secret_box if self.secret_box.enabled else SecretBox.for_this_process()
        self.loop = EventLoopThread()
        self.proxies = ProxyManager.from_settings(self.settings)
        pool_settings = self.settings
        if self.proxies.enabled:  # every run picks its proxy: generic spares would go unused
            pool_settings = self.settings.model_copy(update={"context_prewarm": 0})
        self.pool = BrowserPool(pool_settings)
        self.rate_limiter = RateLimiter.from_settings(self.settings)
        self.tenants = TenantLimiter.from_settings(self.settings)
        self.runner = TemplateRunner(
            self.pool, self.store, self.artifacts, self.settings, listener, self.secret_box,
            rate_limiter=self.rate_limiter,
            proxies=self.proxies,
            checkpoint_box=self.checkpoint_box,
        )
        self.owner = worker_name()
        self._started = False

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Runtime:
        """Migrate (if enabled), start the loop thread and launch a warmed Chromium."""
        if self._started:
            return self
        if self.settings.auto_migrate:
            self.store.upgrade()
        self.loop.start()
        try:
            self.loop.run(self.pool.start(), timeout=BROWSER_START_TIMEOUT_S)
        except BaseException:
            self.loop.stop()
            raise
        self._started = True
        log.info("runtime started", worker=self.owner, browser_pid=self.pool.pid)
        return self

    def stop(self) -> None:
        """Close the browser and driver; leaves no Chromium process behind."""
        if self._started:
            try:
                self.loop.run(self.pool.stop(), timeout=30)
                self.loop.run(self.rate_limiter.aclose(), timeout=5)
            except Exception as exc:
                log.warning("browser pool stop failed", error=str(exc))
            self._started = False
        self.loop.stop()
        self.store.dispose()

    def __enter__(self) -> Runtime:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- in-process runs (CLI, embedding, tests) ------------------------------------------------
    def submit_local(self, template_ref: str, params: dict[str, Any] | None = None, **options: Any) -> PreparedRun:
        """Validate and record a run for in-process execution (secrets stay in memory).
        ``options``: ``identity``, ``identity_pool``, ``tenant``."""
        prepared = prepare_run(self.registry, template_ref, params,
                               max_params_bytes=self.settings.max_params_bytes)
        self._record_local(prepared, options)
        return prepared

    def _record_local(self, prepared: PreparedRun, options: dict[str, Any]) -> None:
        from browserq.celery_app import check_identity_request

        check_run_options(prepared.loaded.ref, **options)
        check_identity_request(self.store, self.secret_box, options.get("identity"), options.get("identity_pool"))
        record_run(self.store, prepared, secret_box=None, **options)

    def run_local(self, template_ref: str, params: dict[str, Any] | None = None, **options: Any) -> RunOutcome:
        """Validate, record and execute a run in this process (the CLI's embedded mode)."""
        prepared = self.submit_local(template_ref, params, **options)
        return self.run_to_end(prepared.run_id, secrets=prepared.secret_values)

    def run_loaded(self, loaded: LoadedTemplate, params: dict[str, Any] | None = None, **options: Any) -> RunOutcome:
        """Like :meth:`run_local` for a template loaded from text rather than the registry."""
        prepared = prepare_loaded(loaded, params, max_params_bytes=self.settings.max_params_bytes)
        self._record_local(prepared, options)
        return self.run_to_end(prepared.run_id, secrets=prepared.secret_values)

    def run_to_end(self, run_id: str, *, secrets: dict[str, Any] | None = None) -> RunOutcome:
        """Execute, sleeping through run-level retries in this process (there is no broker)."""
        while True:
            result = self.execute(run_id, secrets=secrets)
            if isinstance(result, RunOutcome):
                return result
            time.sleep(result.countdown_s)

    # --- the durable path -------------------------------------------------------------------------
    def execute(
        self, run_id: str, *, secrets: dict[str, Any] | None = None, timeout: float | None = None
    ) -> RunOutcome | RetryLater:
        """Execute or resume a recorded run under its lease.

        Returns the final outcome (a run that already ended returns its recorded outcome), or
        :class:`RetryLater` for a run-level failure with retries left. Raises :class:`RunBusy`
        while another live worker holds the run.

        An execution that crashes (an exception that is not a database outage, a lost lease, a
        busy run or a process without a usable browser) never leaves the run ``running`` for the sweeper to re-send into the same
        crash: the first crash is recorded and retried later, the second ends the run failed
        (``EXECUTION_CRASHED``, or ``STORE_WRITE_FAILED`` when the database refused a write).
        """
        try:
            return self._execute(run_id, secrets=secrets, timeout=timeout)
        except (RunBusy, LeaseLost, StoreUnavailable, WorkerUnusable):
            raise
        except Exception as exc:
            if not self._started:
                raise  # this worker cannot run anything (its browser did not start): not the run's fault
            return self._crashed(run_id, exc)

    def _execute(
        self, run_id: str, *, secrets: dict[str, Any] | None = None, timeout: float | None = None
    ) -> RunOutcome | RetryLater:
        run = self.store.get_run(run_id)
        if run is None:
            raise StoreError(f"no run {run_id!r} in the store")
        if run.status in FINISHED_STATUSES:
            return outcome_of(run)
        try:
            loaded, params, names = self._materialize(run, secrets)
        except (TemplateError, ConfigError) as exc:
            code = exc.code if isinstance(exc, TemplateError) else Codes.PARAM_INVALID
            self.store.finish_run(run_id, status="failed", outputs=None, error_code=code.code, error_message=str(exc))
            return outcome_of(self.store.get_run(run_id))  # type: ignore[arg-type]
        if not self._started:
            self.start()
        resumes = 0
        while True:
            try:
                lease = self.store.acquire_lease(
                    run_id, owner=self.owner, ttl_s=self.settings.lease_ttl_s, holder_dead=holder_dead
                )
            except RunAlreadyFinished as finished:
                return outcome_of(finished.run)
            except LeaseBusy as busy:
                wait = max(1.0, (busy.expires_at.timestamp() - time.time()) + 1.0)
                raise RunBusy(run_id, busy.holder, wait) from None
            if lease.takeovers > self.settings.max_worker_losses:
                return self._finish(
                    run_id, lease.token, RunOutcome(
                        run_id, "failed", {}, Codes.WORKER_LOST_REPEATEDLY.code,
                        f"the run's worker died {lease.takeovers} times while running it; giving up so a "
                        "poison run cannot loop forever (raise BROWSERQ_MAX_WORKER_LOSSES to allow more)",
                    ),
                )
            request = self._request(run_id, lease, loaded, params, names)
            try:
                request = self._with_identity(request, run)
            except IdentityBusy as busy:
                return self._wait_for_identity(run_id, lease.token, busy)
            except (IdentityNotFound, IdentityDisabled) as exc:
                return self._finish(run_id, lease.token, RunOutcome(
                    run_id, "failed", {}, Codes.IDENTITY_UNAVAILABLE.code, str(exc)))
            try:
                outcome = self.loop.run(self._run_in_slot(request, run), timeout=timeout or self._backstop_s(run))
            except TenantBusy as busy:
                return self._tenant_busy(run_id, lease.token, busy)
            except TimeoutError:
                # The runner bounds every step and its own finish; this is the last resort that
                # keeps an in-process run (``browserq run``) from waiting forever.
                log.error("run exceeded its backstop; interrupted", run_id=run_id)
                self._finish_interrupted(run_id, lease.token)
                return outcome_of(self.store.get_run(run_id))  # type: ignore[arg-type]
            except BaseException:  # Celery's soft time limit, or the process is stopping
                self._finish_interrupted(run_id, lease.token)
                raise
            if outcome.lease_lost:
                return outcome
            if self.pool.unusable is not None:
                self._release_identity(request)
                self._hand_back(run_id, lease.token, self.pool.unusable)
            decision = self._decide(run_id, lease, outcome, loaded, resumes)
            self._release_identity(request)
            if decision == "resume":
                resumes += 1
                continue
            if isinstance(decision, RetryLater):
                return decision
            return self._finish(run_id, lease.token, outcome)

    def _backstop_s(self, run: RunView) -> float:
        """The longest one execution may take in this process: the tenant-slot wait, the run's
        timeout_s and the margin for its snapshot, trace and context close."""
        return self.settings.tenant_wait_s + run.timeout_s + self.settings.run_time_limit_margin_s

    async def _run_in_slot(self, request: RunRequest, run: RunView) -> RunOutcome:
        """Execute inside one of the run's tenant's concurrency slots (fleet-wide)."""
        async with self.tenants.slot(run.tenant, run.id, wait_s=self.settings.tenant_wait_s):
            return await self.runner.run(request)

    def _with_identity(self, request: RunRequest, run: RunView) -> RunRequest:
        """Lease the identity the run asked for (by name or from a pool) and load its storage."""
        if not run.identity and not run.identity_pool:
            return request
        identity = self.store.acquire_identity(
            run_id=run.id, owner=self.owner, ttl_s=run.timeout_s + self.settings.run_time_limit_margin_s + 60,
            name=run.identity, pool=None if run.identity else run.identity_pool,
        )
        storage = None
        if identity.storage_encrypted:
            storage = self.secret_box.decrypt_json(
                identity.storage_encrypted, why=f"identity {identity.name!r} keeps its storage encrypted"
            )
        log.info("identity leased", run_id=run.id, identity=identity.name, has_storage=storage is not None)
        return replace(request, identity=identity, identity_storage=storage)

    def _release_identity(self, request: RunRequest) -> None:
        if request.identity is not None:
            self.store.release_identity(request.identity.name, token=request.identity.token)

    def _wait_for_identity(self, run_id: str, token: int, busy: IdentityBusy) -> RetryLater:
        countdown = 5.0
        self.store.transition(run_id, "retrying", reason=f"waiting for an identity: {busy}",
                              worker=self.owner, token=token)
        self.store.release_lease(run_id, token=token)
        return RetryLater(RunOutcome(run_id, "retrying", {}, None, str(busy)), countdown)

    def _tenant_busy(self, run_id: str, token: int, busy: TenantBusy) -> RetryLater:
        countdown = max(1.0, busy.retry_after_s or self.settings.tenant_wait_s)
        self.store.transition(run_id, "retrying", reason=str(busy), worker=self.owner, token=token)
        self.store.release_lease(run_id, token=token)
        return RetryLater(RunOutcome(run_id, "retrying", {}, None, str(busy)), countdown)

    def _materialize(
        self, run: RunView, secrets: dict[str, Any] | None
    ) -> tuple[LoadedTemplate, dict[str, Any], frozenset[str]]:
        """The run's stored template body and params, secrets decrypted into memory."""
        record = self.store.get_template_body(run.template_id)
        loaded = load_template_text(
            record.body,
            source=f"{record.name}@{record.version} (stored)",
            max_selector_length=self.settings.max_selector_length,
            max_repeat=self.settings.max_repeat,
        )
        names = frozenset(secret_names(loaded.template))
        params = dict(run.params or {})
        wanted = {n for n in names if params.get(n) == mask(n)}
        if wanted and secrets is None:
            if not run.secrets:
                raise ConfigError(f"secret params {sorted(wanted)} of this run were not stored")
            secrets = self.secret_box.decrypt(run.secrets, why="this run has secret params")
        params.update(secrets or {})
        missing = {n for n in wanted if params.get(n) == mask(n)}
        if missing:
            raise ConfigError(f"secret params {sorted(missing)} of this run are not available to the worker")
        return loaded, params, names

    def _request(
        self, run_id: str, lease: Any, loaded: LoadedTemplate, params: dict[str, Any], names: frozenset[str]
    ) -> RunRequest:
        self.store.mark_interrupted_steps(run_id, before_attempt=lease.attempt)
        latest: dict[str, str] = {}
        for record in self.store.steps(run_id):  # ordered: the last record of a path wins
            latest[record.step_path] = record.status
        unknown = frozenset(
            path for path, status in latest.items() if status == "unknown" and _is_side_effect(loaded, path)
        )
        run = self.store.get_run(run_id)
        assert run is not None
        checkpoint = Checkpoint.from_record(run.checkpoint, self.checkpoint_box) if run.checkpoint else None
        if lease.takeover or checkpoint is not None:
            log.info(
                "resuming run", run_id=run_id, attempt=lease.attempt, takeover=lease.takeover,
                checkpoint=checkpoint.path if checkpoint else None, unknown_side_effects=sorted(unknown),
            )
        return RunRequest(
            run_id=run_id,
            run_attempt=lease.attempt,
            loaded=loaded,
            params=params,
            secret_names=names,
            token=lease.token,
            lease_ttl_s=self.settings.lease_ttl_s,
            resume=checkpoint,
            unknown_side_effects=unknown,
        )

    def _decide(
        self, run_id: str, lease: Any, outcome: RunOutcome, loaded: LoadedTemplate, resumes: int
    ) -> str | RetryLater | None:
        """Finish (None), resume now ("resume") or retry later (RetryLater)."""
        if outcome.status != "failed":
            return None
        error_class = outcome.error_class
        retries_used = max(0, lease.attempt - 1 - lease.takeovers)
        budget = loaded.template.settings.run_retries
        budget = self.settings.run_retries if budget is None else budget
        if error_class is ErrorClass.INFRASTRUCTURE and resumes < MAX_IN_PROCESS_RESUMES:
            self.store.transition(run_id, "retrying", reason=f"browser lost ({outcome.error_code}); resuming",
                                  worker=self.owner, token=lease.token)
            return "resume"
        run_level = (ErrorClass.RETRY_RUN, ErrorClass.ROTATE_IDENTITY, ErrorClass.INFRASTRUCTURE)
        if error_class in run_level and retries_used < budget:
            countdown = backoff_s(
                retries_used, self.settings.run_retry_backoff_s, self.settings.run_retry_backoff_max_s
            )
            self.store.transition(
                run_id, "retrying",
                reason=f"{outcome.error_code}: retry {retries_used + 1} of {budget} in {countdown:.0f} s",
                worker=self.owner, token=lease.token,
                fields={"error_code": outcome.error_code, "error_message": outcome.error_message},
            )
            self.store.release_lease(run_id, token=lease.token)
            return RetryLater(outcome, float(countdown))
        return None

    def _hand_back(self, run_id: str, token: int, reason: str) -> None:
        """Give the run back for another process, then say this one must go."""
        self.store.transition(run_id, "retrying", reason=f"worker has no usable browser: {reason}",
                              worker=self.owner, token=token)
        self.store.release_lease(run_id, token=token)
        log.error("worker has no usable browser; run handed back", run_id=run_id, reason=reason[:300])
        raise WorkerUnusable(
            f"this process could not get a working Chromium ({reason}); run {run_id} was handed "
            "back to be resumed by another worker"
        )

    def _finish_interrupted(self, run_id: str, token: int) -> None:
        """Record a run whose execution was interrupted from outside (it cleaned up already): as
        cancelled when a cancellation was asked for (Celery's terminate records one before it
        signals the process), else as a timeout."""
        try:
            run = self.store.get_run(run_id)
            if run is not None and run.cancel_requested_at is not None:
                outcome = RunOutcome(run_id, "cancelled", {}, Codes.CANCELLED.code, run.cancel_reason or "cancelled")
            else:
                outcome = RunOutcome(
                    run_id, "failed", {}, Codes.RUN_TIMEOUT.code,
                    "the run was interrupted before it finished (Celery time limit or shutdown)",
                )
            self._finish(run_id, token, outcome)
        except Exception as exc:
            log.warning("could not record the interrupted run", run_id=run_id, error=str(exc))

    def _finish(self, run_id: str, token: int, outcome: RunOutcome) -> RunOutcome:
        outcome = self._bounded(outcome)
        try:
            self.store.finish_run(
                run_id,
                status=outcome.status,
                outputs=outcome.outputs,
                error_code=outcome.error_code,
                error_message=outcome.error_message,
                error_step_path=outcome.error_step_path,
                token=token,
                worker=self.owner,
                reason=outcome.error_message if outcome.status == "needs_review" else None,
                warnings=outcome.warnings,
            )
        except (LeaseLost, StoreUnavailable):
            raise
        except StoreError as exc:
            # The database refused the run's end (not an outage): record that, minimally, rather
            # than leave the run running for the sweeper to re-send into the same refusal.
            log.error("run record refused", run_id=run_id, error=first_line(exc))
            outcome = RunOutcome(
                run_id, "failed", {}, Codes.STORE_WRITE_FAILED.code,
                f"the database refused the run's result ({first_line(exc)}); the run had ended "
                f"{outcome.status}{' with ' + outcome.error_code if outcome.error_code else ''}",
                outcome.error_step_path,
            )
            self.store.finish_run(
                run_id, status="failed", outputs=None, error_code=outcome.error_code,
                error_message=outcome.error_message, error_step_path=outcome.error_step_path,
                token=token, worker=self.owner,
            )
        self.store.release_lease(run_id, token=token)
        log.info("run finished", run_id=run_id, status=outcome.status, error_code=outcome.error_code)
        run = self.store.get_run(run_id)
        if run is not None and run.batch_id:
            self._check_batch(run.batch_id)
        return outcome

    def _bounded(self, outcome: RunOutcome) -> RunOutcome:
        """The outcome with recordable outputs within BROWSERQ_MAX_RUN_OUTPUT_BYTES (the runner
        keeps them there step by step; this guards every other way to an end, e.g. a resume)."""
        outputs, size = sized(outcome.outputs or {})
        limit = self.settings.max_run_output_bytes
        message = clean_text(outcome.error_message) if outcome.error_message else outcome.error_message
        if size <= limit:
            return replace(outcome, outputs=outputs, error_message=message)
        return replace(
            outcome, status="failed", outputs={}, error_code=Codes.OUTPUT_TOO_LARGE.code,
            error_message=f"the run's outputs are {size:,} bytes of JSON, over "
            f"BROWSERQ_MAX_RUN_OUTPUT_BYTES={limit:,}; they were not stored",
        )

    def _crashed(self, run_id: str, exc: Exception) -> RunOutcome | RetryLater:
        """Record a crashed execution: retry it later the first time, fail it the second.

        Raises ``exc`` again when the crash cannot be recorded (or the run is not ours); the
        lease then expires and the sweeper's re-send counts as a lost worker (the poison cap).
        """
        refused = isinstance(exc, StoreError) and not isinstance(exc, IllegalTransition)
        code = Codes.STORE_WRITE_FAILED if refused else Codes.EXECUTION_CRASHED
        detail = clean_text(f"{type(exc).__name__}: {first_line(exc)}")
        log.error("run execution crashed", run_id=run_id, error=detail, exc_info=exc)
        try:
            run = self.store.get_run(run_id)
            if run is None:
                raise exc
            if run.status in FINISHED_STATUSES:
                return outcome_of(run)
            ours = run.status == "running" and run.lease_owner == self.owner
            if run.status == "running" and not ours:
                raise exc  # someone else holds it now: not ours to record
            token = run.lease_token if ours else None
            crashes = 1 + sum(
                1 for t in self.store.transitions(run_id) if (t.reason or "").startswith(CRASH_REASON)
            )
            if crashes < MAX_EXECUTION_CRASHES and run.status == "running":
                countdown = backoff_s(0, self.settings.run_retry_backoff_s, self.settings.run_retry_backoff_max_s)
                reason = f"{CRASH_REASON} ({crashes} of {MAX_EXECUTION_CRASHES}): {detail}"
                self.store.transition(
                    run_id, "retrying", reason=reason, worker=self.owner, token=token,
                    fields={"error_code": code.code, "error_message": detail},
                )
                self.store.release_lease(run_id, token=run.lease_token)
                return RetryLater(RunOutcome(run_id, "retrying", {}, code.code, detail), countdown)
            message = (
                f"executing the run crashed {crashes} time(s); it is failed so that it cannot crash "
                f"forever. Last crash: {detail}"
            )
            self.store.finish_run(
                run_id, status="failed", outputs=None, error_code=code.code, error_message=message,
                token=token, worker=self.owner, reason=f"{CRASH_REASON} ({crashes}): {detail}",
            )
            if token is not None:
                self.store.release_lease(run_id, token=token)
            return outcome_of(self.store.get_run(run_id))  # type: ignore[arg-type]
        except Exception as inner:
            if inner is exc:
                raise
            log.error("could not record the crashed execution", run_id=run_id, error=first_line(inner))
            raise exc from inner

    def _check_batch(self, batch_id: str) -> None:
        """Trip the batch's circuit breaker when too many of its first runs failed."""
        summary = self.store.batch_summary(batch_id)
        breaker = summary.breaker or {}
        min_runs = int(breaker.get("min_runs", 0) or 0)
        limit = breaker.get("max_failure_rate")
        if limit is not None and summary.finished >= max(min_runs, 1) and summary.breaker_tripped_at is None:
            failed = summary.failed + summary.needs_review
            rate = failed / summary.finished
            if rate > float(limit):
                reason = (
                    f"circuit breaker: {failed} of the first {summary.finished} runs failed "
                    f"({rate:.0%} > {float(limit):.0%})"
                )
                if self.store.trip_breaker(batch_id, reason=reason):
                    cancelled = self.store.cancel_batch_remaining(batch_id, reason=reason)
                    log.warning("batch circuit breaker tripped", batch_id=batch_id, cancelled=cancelled)
        self.store.finish_batch_if_done(batch_id)


def backoff_s(retries: int, base_s: float, max_s: float) -> float:
    """Exponential backoff with "equal jitter": half fixed, half random, so a batch of runs that
    failed together does not retry together. (Celery's helper only takes whole seconds.)"""
    ceiling = min(max_s, base_s * (2**retries))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def _is_side_effect(loaded: LoadedTemplate, path: str) -> bool:
    """Whether the step at an execution path (``1[3].0``) is declared ``side_effect: true``."""
    try:
        segments = parse_path(path)
    except ValueError:
        return False
    steps: list[Any] = loaded.template.steps
    step: Any = None
    for index, _pass in segments:
        if step is not None:
            if not isinstance(step, RepeatStep):
                return False
            steps = step.repeat.steps
        if index >= len(steps):
            return False
        step = steps[index]
    return bool(getattr(step, "side_effect", False))


def outcome_of(run: RunView) -> RunOutcome:
    return RunOutcome(
        run_id=run.id,
        status=run.status,
        outputs=run.outputs or {},
        error_code=run.error_code,
        error_message=run.error_message,
        error_step_path=run.error_step_path,
        warnings=list(run.warnings or []),
    )
