"""Everything one process needs to execute runs, behind a synchronous façade.

A :class:`Runtime` owns the event-loop thread, the browser pool, the store and the artifact
directory. Celery workers build one per prefork child (after the fork); the CLI builds one
in-process. Both then call :meth:`Runtime.execute` with a recorded run's id.

``execute`` is where durability is decided, one attempt at a time: take the run's lease (so a
duplicate delivery cannot run it twice at once), build the request (unfinished steps marked,
resume from the last checkpoint), lease its identity and tenant slot, run it, and act on the
decision :mod:`browserq.execute.decide` takes by the policy of whatever ended the attempt:
finish the run, resume at once (the browser died), or retry later. A run that waited for a person
in a worker that is stopping is handed over: re-enqueued at once, spending neither a retry nor a
worker loss.

What one execution costs the store, besides what its steps record: one transaction takes the
lease, marks the run running and reads it (the only read of the run); one records the end
(status, outputs, error and transition together; leaving ``running`` gives the lease back). The
stored template is read and parsed once per process. A retried attempt also marks and reads the
step records its predecessors left.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog

from browserq.browsers import BrowserPool, EventLoopThread
from browserq.browsers.loop import sleep_awake  # not re-exported: one caller
from browserq.errors import Codes, ConfigError, TemplateError
from browserq.execute.accept import (
    PreparedRun,
    check_identity_request,
    record_run,
)
from browserq.execute.admission import admit
from browserq.execute.decide import Budget, Failure, Finish, ResumeNow, RetryLater, decide
from browserq.execute.errors import RunBusy, WorkerUnusable
from browserq.execute.finish import RunEnds, lost_too_often
from browserq.execute.identity_slots import IdentitySlots
from browserq.execute.liveness import holder_dead, worker_name
from browserq.execute.meters import UNMETERED_RUNTIME, RuntimeMeters
from browserq.execute.run_log import RunLog
from browserq.execute.run_request import (
    StoredTemplates,
    build_request,
    materialize,
    outcome_of,
    recorded_outcome,
)
from browserq.journal import RunRecords
from browserq.limits import RateLimiter, TenantBusy, TenantLimiter
from browserq.proxies import ProxyManager, ProxySpares
from browserq.run_events import Observers, RunEnded, RunObserver, RunStarted
from browserq.runner import RunOutcome, RunRequest, StepListener, TemplateRunner
from browserq.secrets import SecretBox
from browserq.settings import Settings, get_settings
from browserq.store import (
    IdentityError,
    Lease,
    LeaseBusy,
    LeaseLost,
    RunAlreadyFinished,
    RunView,
    Store,
    StoreUnavailable,
    artifact_store,
)
from browserq.store.handoffs import HANDOVER_REASON
from browserq.store.relay import NO_RELAY, WebhookRelay
from browserq.templates import LoadedTemplate, TemplateRegistry

log = structlog.get_logger(__name__)

BROWSER_START_TIMEOUT_S = 60.0
#: Threads for the blocking calls runs make from the loop (``asyncio.to_thread``: journal writes,
#: evidence, proxy health). asyncio's default, ``cpu_count + 4``, is 6 on 2 cores: with K runs
#: of ``--pool threads`` on one loop, their store writes would queue behind each other.
IO_THREADS = 32
#: What one attempt of ``execute`` yields when the run must be resumed at once in this process.
_RESUME = None


class Runtime:
    """One process's means to execute runs: browser pool, store, limits, and the durable path."""

    def __init__(
        self, settings: Settings | None = None, *, listener: StepListener | None = None,
        observers: Iterable[RunObserver] = (), webhook_relay: WebhookRelay = NO_RELAY,
        meters: RuntimeMeters = UNMETERED_RUNTIME,
    ) -> None:
        self.settings = settings or get_settings()
        #: Who watches this process's runs (progress, metrics, step logs); ``listener`` joins them.
        self.observers = Observers([RunLog(self.settings.step_log_level), *observers])
        #: ``webhook_relay``: who sends the events its runs record (a worker's: at once);
        #: ``meters``: what its parts report to (the pool, limiter, proxies, identities).
        self.store = Store.from_settings(self.settings, webhook_relay=webhook_relay)
        self.artifacts = artifact_store(self.settings)
        self.registry = TemplateRegistry.from_settings(self.settings)
        self.secret_box = SecretBox(self.settings.secret_key)
        #: Encrypts checkpoints of runs with secrets: the real key, else one only this process has.
        self.checkpoint_box = self.secret_box if self.secret_box.enabled else SecretBox.for_this_process()
        self.loop = EventLoopThread()
        self.proxies = ProxyManager.from_settings(self.settings, failed=meters.proxy_failed)
        # With proxies, a spare is made for the proxy its run will use (chosen when it is made).
        self.pool = BrowserPool(self.settings, spares=ProxySpares(self.proxies) if self.proxies.enabled else None,
                                meter=meters.pool)
        self.rate_limiter = RateLimiter.from_settings(self.settings, waited=meters.rate_limit_waited)
        self.tenants = TenantLimiter.from_settings(self.settings)
        # The runner's journals write only these repositories (the runner never names the Store).
        self.runner = TemplateRunner(
            self.pool, RunRecords.of(self.store), self.artifacts, self.settings, listener, self.secret_box,
            rate_limiter=self.rate_limiter,
            proxies=self.proxies,
            checkpoint_box=self.checkpoint_box,
            observers=self.observers,
        )
        self.owner = worker_name()
        self.identities = IdentitySlots(self.store, self.secret_box, self.settings, self.owner,
                                        leased=meters.identity_leased)
        self.ends = RunEnds(self.store, self.settings, self.owner)
        self.templates = StoredTemplates(self.store, self.settings)
        self._started = False

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Runtime:
        """Migrate (if enabled), start the loop thread and launch a warmed Chromium."""
        if self._started:
            return self
        if self.settings.auto_migrate:
            self.store.schema.upgrade()
        self.artifacts.check()  # a bucket that cannot be used: one ConfigError now, not one per run
        self.loop.start()
        self.loop.loop.set_default_executor(ThreadPoolExecutor(IO_THREADS, thread_name_prefix="browserq-io"))
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
        return self._admit_local(template_ref, params, options)

    def submit_loaded(self, loaded: LoadedTemplate, params: dict[str, Any] | None = None, **options: Any) -> PreparedRun:
        """Like :meth:`submit_local` for a template loaded from text rather than the registry."""
        return self._admit_local(loaded, params, options)

    def _admit_local(self, template: str | LoadedTemplate, params: dict[str, Any] | None,
                     options: dict[str, Any]) -> PreparedRun:
        """Admit (every limit of the settings) and record a run executed here.
        ``options``: ``identity``, ``identity_pool``, ``tenant``, ``notify``."""
        admission = admit(self.settings, template, params, registry=self.registry, **options)
        options.pop("notify", None)
        check_identity_request(self.store, self.secret_box, options.get("identity"), options.get("identity_pool"))
        record_run(self.store, admission.prepared, secret_box=None, artifacts=self.artifacts,
                   notify_url=admission.notify_url, **options)
        return admission.prepared

    def run_local(self, template_ref: str, params: dict[str, Any] | None = None, **options: Any) -> RunOutcome:
        """Validate, record and execute a run in this process (the CLI's embedded mode)."""
        prepared = self.submit_local(template_ref, params, **options)
        return self.run_to_end(prepared.run_id, secrets=prepared.secret_values)

    def run_loaded(self, loaded: LoadedTemplate, params: dict[str, Any] | None = None, **options: Any) -> RunOutcome:
        """Like :meth:`run_local` for a template loaded from text rather than the registry."""
        prepared = self.submit_loaded(loaded, params, **options)
        return self.run_to_end(prepared.run_id, secrets=prepared.secret_values)

    def run_to_end(self, run_id: str, *, secrets: dict[str, Any] | None = None) -> RunOutcome:
        """Execute, sleeping through run-level retries in this process (there is no broker)."""
        while True:
            result = self.execute(run_id, secrets=secrets)
            if isinstance(result, RunOutcome):
                return result
            sleep_awake(result.countdown_s)  # Ctrl-C in the pause is heard at once

    # --- the durable path -------------------------------------------------------------------------
    def execute(
        self, run_id: str, *, secrets: dict[str, Any] | None = None, timeout: float | None = None
    ) -> RunOutcome | RetryLater:
        """Execute or resume a recorded run under its lease.

        Returns the final outcome (a run that already ended returns its recorded outcome), or
        :class:`RetryLater` for a run-level failure with retries left. Raises :class:`RunBusy`
        while another live worker holds the run.

        Raises :class:`StoreUnavailable` when the database stayed away past the store's retry
        window (the attempt stopped, nothing recorded: the caller tries again later, and the run
        resumes from its last checkpoint, its in-doubt side effect probed, never replayed).

        An execution that crashes (an exception that is not a database outage, a lost lease, a
        busy run or a process without a usable browser) never leaves the run ``running`` for the
        sweeper to re-send into the same crash: see :meth:`RunEnds.crashed`.
        """
        result: RunOutcome | RetryLater | None = None
        try:
            result = self._execute(run_id, secrets=secrets, timeout=timeout)
            return result
        except (RunBusy, LeaseLost, StoreUnavailable, WorkerUnusable):
            raise
        except Exception as exc:
            if not self._started:
                raise  # this worker cannot run anything (its browser did not start): not the run's fault
            result = self.ends.crashed(run_id, exc)
            return result
        finally:
            self.observers.run_ended(ended_event(run_id, result))

    def _execute(
        self, run_id: str, *, secrets: dict[str, Any] | None = None, timeout: float | None = None
    ) -> RunOutcome | RetryLater:
        if not self._started:
            self.start()
        lease = self._lease(run_id)  # also the one read of the run (lease.run)
        if isinstance(lease, RunOutcome):
            return lease
        assert lease.run is not None
        run = lease.run
        self.observers.run_started(RunStarted(run.id, run.template_name, run.template_version,
                                              lease.attempt, self.owner))
        try:
            loaded, params, names = materialize(self.templates, lease.run, secrets, self.secret_box)
        except (TemplateError, ConfigError) as exc:
            code = exc.code if isinstance(exc, TemplateError) else Codes.PARAM_INVALID
            return self.ends.finish(run_id, lease.token, RunOutcome(run_id, "failed", {}, code.code, str(exc)),
                                    lease.run.batch_id)
        resumes = 0
        while True:
            result = self._attempt(lease, loaded, params, names, timeout=timeout, resumes=resumes)
            if result is not _RESUME:
                return result
            resumes += 1
            lease = self._lease(run_id)
            if isinstance(lease, RunOutcome):
                return lease

    def _lease(self, run_id: str) -> Lease | RunOutcome:
        """The run's lease for this attempt, or the outcome of a run that already ended."""
        try:
            return self.store.leases.acquire_lease(
                run_id, owner=self.owner, ttl_s=self.settings.lease_ttl_s, holder_dead=holder_dead
            )
        except RunAlreadyFinished as finished:
            return outcome_of(finished.run)
        except LeaseBusy as busy:
            wait = busy.retry_in_s or max(1.0, (busy.expires_at.timestamp() - time.time()) + 1.0)
            raise RunBusy(run_id, busy.holder, wait) from None

    def _attempt(
        self, lease: Lease, loaded: LoadedTemplate, params: dict[str, Any], names: frozenset[str],
        *, timeout: float | None, resumes: int,
    ) -> RunOutcome | RetryLater | None:
        """One attempt under ``lease``: the outcome, a later retry, or ``_RESUME`` (now, here)."""
        run = lease.run
        assert run is not None
        if lease.takeovers > self.settings.max_worker_losses:
            return self.ends.finish(run.id, lease.token, lost_too_often(run.id, lease.takeovers), run.batch_id)
        run, request = build_request(self.store, lease, loaded, params, names,
                                     checkpoint_box=self.checkpoint_box, lease_ttl_s=self.settings.lease_ttl_s)
        try:
            request = self.identities.lease(request, run)
        except IdentityError as exc:  # busy, unknown or disabled: its policy says which
            failure = Failure.of_error(run.id, exc, default_code=Codes.IDENTITY_UNAVAILABLE)
            return self._act(failure, run, lease, loaded, request, resumes)
        try:
            outcome = self.loop.run(self._run_in_slot(request, run), timeout=timeout or self._backstop_s(run))
        except TenantBusy as busy:
            return self._act(Failure.of_error(run.id, busy, default_code=Codes.RUN_TIMEOUT),
                             run, lease, loaded, request, resumes)
        except StoreUnavailable:
            raise  # nothing can be recorded now; the task tries again later (see run_task)
        except TimeoutError:
            # The runner bounds every step and its own finish; this is the last resort that
            # keeps an in-process run (``browserq run``) from waiting forever.
            log.error("run exceeded its backstop; interrupted", run_id=run.id)
            self.ends.interrupted(run.id, lease.token)
            return recorded_outcome(self.store, run.id)
        except BaseException:  # Celery's soft time limit, or the process is stopping
            self.ends.interrupted(run.id, lease.token)
            raise
        if outcome.lease_lost:
            return outcome
        if outcome.store_unavailable:  # the attempt stopped, its browser context closed
            raise StoreUnavailable(outcome.error_message or f"run {run.id}: the database is unavailable")
        self.identities.release(request)
        if outcome.handed_over:
            return self._hand_over(run.id, lease.token, outcome)
        if self.pool.unusable is not None:
            self.ends.write_tail(run.id, lease.token, outcome)
            self._hand_back(run.id, lease.token, self.pool.unusable)
        return self._act(Failure.of_outcome(outcome), run, lease, loaded, request, resumes)

    def _act(
        self, failure: Failure, run: RunView, lease: Lease, loaded: LoadedTemplate, request: RunRequest,
        resumes: int,
    ) -> RunOutcome | RetryLater | None:
        """Take the decision for how the attempt ended, and carry it out."""
        allowed = loaded.template.settings.run_retries
        handovers = self.store.handoffs.handovers(run.id) if lease.attempt > 1 else 0  # they spend no retry
        budget = Budget(
            used=max(0, lease.attempt - 1 - lease.takeovers - handovers),
            allowed=self.settings.run_retries if allowed is None else allowed,
            resumes=resumes,
            identity=request.identity.name if request.identity is not None and run.identity_pool else None,
            pool=run.identity_pool,
        )
        decision = decide(failure, budget, backoff_base_s=self.settings.run_retry_backoff_s,
                          backoff_max_s=self.settings.run_retry_backoff_max_s)
        if isinstance(decision, Finish):
            return self.ends.finish(run.id, lease.token, decision.outcome, run.batch_id)
        if isinstance(decision, ResumeNow):
            self.store.transitions.transition(run.id, "retrying", reason=decision.reason, worker=self.owner, token=lease.token)
            return _RESUME
        # Leaving ``running`` under our own token gives the lease back in the same transaction.
        self.store.transitions.transition(run.id, "retrying", reason=decision.reason, worker=self.owner,
                              token=lease.token, fields=decision.fields)
        return RetryLater(decision.outcome, decision.countdown_s)

    def _backstop_s(self, run: RunView) -> float:
        """The longest one execution may take in this process: the tenant-slot wait, the run's
        timeout_s and the margin for its snapshot, trace and context close."""
        budget = run.timeout_s + (run.human_wait_s or 0.0)  # a wait for people is not timeout_s
        return self.settings.tenant_wait_s + budget + self.settings.run_time_limit_margin_s

    async def _run_in_slot(self, request: RunRequest, run: RunView) -> RunOutcome:
        """Execute inside one of the run's tenant's concurrency slots (fleet-wide)."""
        async with self.tenants.slot(run.tenant, run.id, wait_s=self.settings.tenant_wait_s):
            return await self.runner.run(request)

    def _hand_over(self, run_id: str, token: int, outcome: RunOutcome) -> RetryLater:
        """The run waited for a person in a worker that is stopping: re-enqueue it at once, from
        its last checkpoint. Fenced by its own lease, so neither a lost worker (no takeover) nor
        a retry spent (see :meth:`_act`); the caller sends the new message."""
        self.store.transitions.transition(run_id, "retrying", worker=self.owner, token=token, reason=(
            f"{HANDOVER_REASON}: its worker is stopping while the run waits for a person; it waits "
            "again on another worker, resumed from its last checkpoint"))
        log.info("run handed over: this worker is stopping", run_id=run_id)
        return RetryLater(outcome, 0.0)

    def _hand_back(self, run_id: str, token: int, reason: str) -> None:
        """Give the run back for another process, then say this one must go."""
        self.store.transitions.transition(run_id, "retrying", reason=f"worker has no usable browser: {reason}",
                              worker=self.owner, token=token)  # gives the lease back, too
        log.error("worker has no usable browser; run handed back", run_id=run_id, reason=reason[:300])
        raise WorkerUnusable(
            f"this process could not get a working Chromium ({reason}); run {run_id} was handed "
            "back to be resumed by another worker"
        )


def ended_event(run_id: str, result: RunOutcome | RetryLater | None) -> RunEnded:
    """What observers hear when ``execute`` returns ``result`` (None: it raised — the run was
    handed back, its lease lost, or the store is down; it goes on elsewhere or later)."""
    if isinstance(result, RunOutcome):
        return RunEnded(run_id, result.status, result.error_code)
    if isinstance(result, RetryLater):
        return RunEnded(run_id, "retrying", result.outcome.error_code)
    return RunEnded(run_id, "interrupted")


__all__ = ["BROWSER_START_TIMEOUT_S", "IO_THREADS", "RetryLater", "Runtime"]
