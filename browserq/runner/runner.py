"""Executing one run of a template: steps in order, control flow, retries in place, records.

The runner is where the main rule lives: a step that fails because of the page or the template is
recorded with its error code and retried in place when the code allows; it never touches the
browser. Only an :class:`InfrastructureError` (the browser itself is gone) leaves the pool to
relaunch Chromium, and even then only this run is affected.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from playwright.async_api import BrowserContext, Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from browserq import stealth
from browserq.browsers.domains import BlockLog
from browserq.browsers.pool import BrowserPool
from browserq.errors import (
    Codes,
    ErrorClass,
    InfrastructureError,
    NeedsReview,
    StepFailed,
    StoreError,
)
from browserq.guards import check_selector_length, check_url
from browserq.limits import (
    BlockStats,
    NavigationGate,
    RateLimiter,
    install_blocking,
    install_navigation_gate,
)
from browserq.proxies import AUTH, REFUSED, TUNNEL, Proxy, ProxyManager, classify_error
from browserq.recordable import clean_text, dumps
from browserq.redact import Redactor
from browserq.redact import active as active_redactor
from browserq.runner import notices
from browserq.runner.actions import element_selector, handler_for, locate, settle, url_matcher
from browserq.runner.capture import PageActivity
from browserq.runner.checkpoint import Checkpoint, ResumeCursor
from browserq.runner.context import StepContext, not_traced
from browserq.runner.outputs import OutputBudget, check_step_output
from browserq.runner.trace import TraceRecorder
from browserq.runner.translate import first_line, translate
from browserq.runner.watchdog import PageState, PageWatchdog
from browserq.secrets import SecretBox
from browserq.settings import Settings
from browserq.store import ArtifactDir, IdentityLease, LeaseLost, Store, StoreUnavailable
from browserq.store.artifacts import StoredFile
from browserq.templates import ActionStep, LoadedTemplate, RepeatStep, render, render_step

log = structlog.get_logger(__name__)

#: How long each part of a failure snapshot may take: a sick page must not hold the worker.
SNAPSHOT_TIMEOUT_S = 3.0
#: The longest a running run takes to notice it was cancelled (the heartbeat reads the flag).
CANCEL_POLL_S = 2.0
#: Step outputs larger than this are stored in the step record as a summary only.
MAX_RECORDED_OUTPUT_BYTES = 256 * 1024
#: A step attempt is cut this long after its timeout_s: Playwright's own timeout (with its more
#: useful message) fires first; the cut catches calls that have none (evaluate, count, title).
STEP_GRACE_S = 1.0
#: The failure snapshot, trace and context close after the run: bounded, whatever the page does.
FINISH_TIMEOUT_S = 20.0
#: How long deciding "is the element missing?" after a failure may take.
MISSING_CHECK_TIMEOUT_S = 6.0


@dataclass(frozen=True)
class RunRequest:
    """Everything needed to execute a run that already has its record in the store."""

    run_id: str
    run_attempt: int
    loaded: LoadedTemplate
    params: dict[str, Any]  # validated, secrets in clear (memory only)
    secret_names: frozenset[str] = frozenset()
    token: int | None = None  # the lease's fencing token: every write carries it
    lease_ttl_s: float = 30.0
    resume: Checkpoint | None = None  # continue after this checkpoint
    unknown_side_effects: frozenset[str] = frozenset()  # paths whose outcome is unknown
    identity: IdentityLease | None = None  # the visitor this run plays (leased to it alone)
    identity_storage: dict[str, Any] | None = None  # that identity's saved storage, decrypted


@dataclass
class RunOutcome:
    run_id: str
    status: str
    outputs: dict[str, Any]
    error_code: str | None = None
    error_message: str | None = None
    error_step_path: str | None = None
    lease_lost: bool = False  # another worker took the run over: nothing may be written
    #: ``[{step, code, message}]``: where a limit cut the result short (see runner.notices).
    warnings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def error_class(self) -> ErrorClass | None:
        return Codes.by_name(self.error_code).error_class if self.error_code else None

    def as_result(self) -> dict[str, Any]:
        """The JSON-serializable value a Celery task returns."""
        error = None
        if self.error_code:
            error = {"code": self.error_code, "message": self.error_message, "step": self.error_step_path}
        return {
            "run_id": self.run_id,
            "status": self.status,
            "outputs": self.outputs,
            "error": error,
            "warnings": self.warnings,
        }


@dataclass(frozen=True)
class StepEvent:
    """One finished step attempt, as shown to a live listener (the CLI's progress lines)."""

    step_path: str
    step_id: str | None
    action: str
    attempt: int
    status: str
    duration_ms: float
    error_code: str | None
    error_message: str | None
    url: str | None


StepListener = Callable[[StepEvent], None]


@dataclass
class _RunState:
    request: RunRequest
    redactor: Redactor
    deadline: float
    artifact_base: Path
    page: Page | None = None
    outputs: dict[str, Any] = field(default_factory=dict)
    warnings: list[dict[str, Any]] = field(default_factory=list)  # run_warning() dicts, in order
    loops: list[dict[str, Any]] = field(default_factory=list)
    failed_attempt_id: int | None = None
    failed_path: str | None = None
    crashed: bool = False
    context: BrowserContext | None = None
    cursor: ResumeCursor | None = None
    checkpoint_seq: int = 0
    relogged: set[str] = field(default_factory=set)  # steps retried after a new login
    last_navigation: str | None = None  # the URL the last navigate step asked for
    blocked: BlockStats | None = None
    proxy: Proxy | None = None
    gate: NavigationGate | None = None
    domains: BlockLog | None = None  # what the browser refused to send (allowed_domains)
    interrupt: str | None = None  # "cancel" or "lease_lost", set by the heartbeat
    interrupt_reason: str = ""
    trace: TraceRecorder | None = None
    budget: OutputBudget | None = None  # the run's outputs within BROWSERQ_MAX_RUN_OUTPUT_BYTES
    watchdog: PageWatchdog | None = None  # probes and unblocks the run's page
    page_dropped: bool = False  # the page stayed unresponsive and was closed

    def scope(self) -> dict[str, Any]:
        scope: dict[str, Any] = dict(self.request.params)
        scope["outputs"] = self.outputs
        scope["run"] = {"id": self.request.run_id, "attempt": self.request.run_attempt}
        if self.loops:
            scope["loop"] = {k: self.loops[-1][k] for k in ("index", "iteration")}
        return scope

    @property
    def token(self) -> int | None:
        return self.request.token


class TemplateRunner:
    def __init__(
        self,
        pool: BrowserPool,
        store: Store,
        artifacts: ArtifactDir,
        settings: Settings,
        listener: StepListener | None = None,
        secret_box: SecretBox | None = None,
        rate_limiter: RateLimiter | None = None,
        proxies: ProxyManager | None = None,
        checkpoint_box: SecretBox | None = None,
    ) -> None:
        self.pool = pool
        self.store = store
        self.artifacts = artifacts
        self.settings = settings
        self.listener = listener
        self.secret_box = secret_box or SecretBox(settings.secret_key)
        # Without BROWSERQ_SECRET_KEY, checkpoints of runs with secrets are encrypted with a key
        # that exists only in this process (see Checkpoint.to_record): never stored in clear.
        self.checkpoint_box = checkpoint_box or (
            self.secret_box if self.secret_box.enabled else SecretBox.for_this_process()
        )
        self.rate_limiter = rate_limiter
        self.proxies = proxies if proxies is not None and proxies.enabled else None

    async def _db(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Store calls are synchronous; keep them off the event loop."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    # --- a whole run -------------------------------------------------------------------------
    async def run(self, request: RunRequest) -> RunOutcome:
        """Execute (or resume) a run and return its outcome; the caller records the final status.

        While it runs, its redactor scrubs every log line of this process (Celery's included)."""
        redactor = Redactor({name: request.params.get(name) for name in request.secret_names})
        with active_redactor(redactor):
            return await self._run(request, redactor)

    async def _run(self, request: RunRequest, redactor: Redactor) -> RunOutcome:
        template = request.loaded.template
        tsettings = template.settings
        state = _RunState(
            request=request,
            redactor=redactor,
            deadline=time.monotonic() + tsettings.timeout_s,
            artifact_base=self.artifacts.base / request.run_id,
        )
        if request.resume is not None:
            state.outputs = dict(request.resume.outputs)
            state.warnings = list(request.resume.warnings)
            state.cursor = ResumeCursor(request.resume)
            state.checkpoint_seq = request.resume.seq
        state.budget = OutputBudget.of(state.outputs, self.settings.max_run_output_bytes)
        failure: StepFailed | None = None
        status = "failed"
        context: BrowserContext | None = None
        activity: PageActivity | None = None
        main = asyncio.current_task()
        assert main is not None
        heartbeat = (
            asyncio.create_task(self._heartbeat(state, main)) if request.token is not None else None
        )
        try:
            context = await self.pool.new_context(**await self._context_options(state))
            state.context = context
            activity = PageActivity(
                context,
                console_lines=self.settings.snapshot_console_lines,
                network_entries=self.settings.snapshot_network_entries,
            )
            context.set_default_timeout(tsettings.step_timeout_s * 1000)
            await self._install_limits(context, state)
            if tsettings.trace != "off":
                state.trace = TraceRecorder(context, state.artifact_base)
                await state.trace.start()
            state.page = context.pages[0] if context.pages else await stealth.new_page(context)
            state.page.on("crash", lambda _page: setattr(state, "crashed", True))
            # Before the first request of the run (resume and steps): a foreign document never leaves.
            state.domains = await self.pool.domain_guard(context).protect(
                context, state.page, tsettings.allowed_domains, strict=tsettings.network == "strict"
            )
            state.watchdog = PageWatchdog(context, state.page)
            await state.watchdog.attach()
            try:
                async with asyncio.timeout(tsettings.timeout_s):
                    if request.resume is not None:
                        await self._restore(request.resume, state)
                    await self._run_steps(template.steps, "", state)
                    _raise_if_blocked(state)  # a navigation the last step started, refused since
                status = "completed"
            except TimeoutError:
                failure = StepFailed(
                    Codes.RUN_TIMEOUT, f"the run did not finish within timeout_s={tsettings.timeout_s:g}"
                )
        except NeedsReview as exc:
            failure, status = exc, "needs_review"
        except StepFailed as exc:
            failure = exc
        except LeaseLost:
            state.interrupt = "lease_lost"
        except StoreUnavailable as exc:
            failure = translate(exc, browser_connected=self.pool.connected)
        except StoreError as exc:  # the database refused a record (not an outage)
            failure = StepFailed(Codes.STORE_WRITE_FAILED, f"the database refused a record: {first_line(exc)}")
            log.error("store write refused", run_id=request.run_id, error=first_line(exc))
        except asyncio.CancelledError:
            if state.interrupt is None:
                # Interrupted from outside (Celery's soft time limit, shutdown): still recorded.
                failure = StepFailed(Codes.RUN_TIMEOUT, "the run was interrupted before it finished (time limit)")
            else:
                main.uncancel()  # our own heartbeat interrupted the run; handled here
                if state.interrupt == "cancel":
                    failure, status = StepFailed(Codes.CANCELLED, state.interrupt_reason), "cancelled"
        except Exception as exc:
            failure = translate(exc, browser_connected=self.pool.connected)
            if failure.code is Codes.INTERNAL:
                log.exception("unexpected error in run", run_id=request.run_id)
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
        if state.interrupt == "lease_lost":
            if state.trace is not None:
                state.trace.discard()
            if context is not None:
                await self.pool.close_context(context)
            log.warning("lease lost: another worker owns this run now", run_id=request.run_id)
            return RunOutcome(request.run_id, "running", {}, lease_lost=True)
        if context is not None:
            await self._save_identity(state)
            await self._finish_context(context, activity, state, failure if status == "failed" else None)
        await self._report_proxy(state, status, failure)
        return self._outcome(state, status, failure)

    # --- identity and proxy ---------------------------------------------------------------------
    async def _context_options(self, state: _RunState) -> dict[str, Any]:
        """Storage to restore (a checkpoint's, else the identity's) and the proxy for this run."""
        request = state.request
        options: dict[str, Any] = {}
        storage = request.resume.storage if request.resume else request.identity_storage
        if storage:
            options["storage_state"] = storage
        if request.identity is not None:
            options["identity_seed"] = request.identity.fingerprint_seed
            options["region"] = request.identity.region
        if self.proxies is not None:
            state.proxy = await asyncio.to_thread(self._proxy_for, state)
            options.update(self.proxies.context_options(state.proxy))
            if state.proxy is not None and state.proxy.region and not options.get("region"):
                options["region"] = state.proxy.region
            if state.proxy is not None:
                log.info("run via proxy", run_id=request.run_id, proxy=state.proxy.label)
        return options

    def _proxy_for(self, state: _RunState) -> Proxy | None:
        """An identity keeps its proxy while that proxy is healthy (then gets a new sticky one);
        anonymous runs follow the configured strategy."""
        assert self.proxies is not None
        identity = state.request.identity
        if identity is None:
            return self.proxies.choose(domain=_start_host(state))
        by_id = {p.id: p for p in self.proxies.proxies}
        current = by_id.get(identity.proxy_id or "")
        if current is not None and not self.proxies.health.is_cooling(current):
            return current
        chosen = self.proxies.choose(domain=_start_host(state), identity=identity.name)
        if chosen is not None and chosen.id != identity.proxy_id:
            self.store.set_identity_proxy(identity.name, token=identity.token, proxy_id=chosen.id)
        return chosen

    async def _save_identity(self, state: _RunState) -> None:
        """Keep what the site gave this visitor (cookies, storage) for the identity's next run."""
        identity = state.request.identity
        if identity is None or state.context is None or state.interrupt or not self.pool.connected:
            return
        try:
            await self._unblock(state)
            storage = await asyncio.wait_for(state.context.storage_state(indexed_db=True), SNAPSHOT_TIMEOUT_S * 2)
            await self._store_identity_storage(state, storage)
        except Exception as exc:
            log.warning("identity storage not saved", identity=identity.name, error=str(exc))

    async def _store_identity_storage(self, state: _RunState, storage: dict[str, Any]) -> None:
        identity = state.request.identity
        assert identity is not None
        token = self.secret_box.encrypt_json(storage, why="identities keep their browser storage encrypted")
        await self._db(
            self.store.save_identity_storage, identity.name, token=identity.token, storage_encrypted=token
        )

    async def _report_proxy(self, state: _RunState, status: str, failure: StepFailed | None) -> None:
        """Tell the shared proxy health how this run went (a failing proxy cools down)."""
        proxy, manager = state.proxy, self.proxies
        if proxy is None or manager is None:
            return
        try:
            if failure is not None and failure.code is Codes.PROXY_FAILED:
                await asyncio.to_thread(manager.report_error, proxy, failure.message)
            elif failure is not None and failure.code is Codes.BLOCKED:
                status_code = 429 if "429" in failure.message else 403
                await asyncio.to_thread(manager.report_response, proxy, status_code, "")
            elif status == "completed":
                await asyncio.to_thread(manager.report_success, proxy)
        except Exception as exc:
            log.warning("proxy health not updated", error=str(exc))

    async def _install_limits(self, context: BrowserContext, state: _RunState) -> None:
        """Resource blocking and the fleet-wide per-domain rate limits, for every page load."""
        tsettings = state.request.loaded.template.settings
        if tsettings.block_resources:
            state.blocked = await install_blocking(context, frozenset(tsettings.block_resources))
        if self.rate_limiter is not None:
            limiter = self.rate_limiter.for_template(tsettings.rate_limits)
            if limiter.enabled:
                state.gate = await install_navigation_gate(context, limiter, deadline=state.deadline)

    async def _heartbeat(self, state: _RunState, main: asyncio.Task[Any]) -> None:
        """Renew the lease while the run progresses; stop the run if it was lost or cancelled."""
        request = state.request
        # Every third of the lease, and at least every CANCEL_POLL_S so a cancel lands quickly.
        interval = max(0.5, min(request.lease_ttl_s / 3, CANCEL_POLL_S))
        while True:
            await asyncio.sleep(interval)
            try:
                view = await self._db(
                    self.store.renew_lease, request.run_id, token=request.token, ttl_s=request.lease_ttl_s
                )
            except LeaseLost:
                state.interrupt = "lease_lost"
                main.cancel()
                return
            except StoreError as exc:  # the database is away: keep trying while the lease lasts
                log.warning("lease renewal failed", run_id=request.run_id, error=str(exc))
                continue
            if view.cancel_requested_at is not None:
                state.interrupt = "cancel"
                state.interrupt_reason = view.cancel_reason or "cancelled"
                main.cancel()
                return

    async def _restore(self, checkpoint: Checkpoint, state: _RunState) -> None:
        """Open the checkpoint's page in the fresh context (storage already restored)."""
        page = self._page(state)
        path = f"{checkpoint.path}~resume"
        attempt_id = await self._db(
            self.store.start_step,
            run_id=state.request.run_id,
            run_attempt=state.request.run_attempt,
            step_path=path,
            step_id=None,
            attempt=1,
            action="resume",
            inputs={"checkpoint": checkpoint.path, "url": state.redactor.text(checkpoint.url), "seq": checkpoint.seq},
            url_before=None,
            token=state.token,
        )
        failure = None
        started = time.monotonic()
        try:
            if checkpoint.url.startswith(("http://", "https://")):
                await page.goto(checkpoint.url, timeout=state.request.loaded.template.settings.step_timeout_s * 1000)
        except Exception as exc:
            failure = _domain_failure(state) or translate(exc, browser_connected=self.pool.connected)
        await self._db(
            self.store.finish_step,
            attempt_id,
            status="failed" if failure else "succeeded",
            url_after=state.redactor.text(page.url),
            output={"resumed_from": checkpoint.path},
            error_code=failure.code.code if failure else None,
            error_message=state.redactor.text(failure.message) if failure else None,
            retryable=failure.retryable if failure else None,
            token=state.token,
        )
        self._notify(path, None, "resume", 1, "failed" if failure else "succeeded", started, failure,
                     state.redactor.text(page.url), state.redactor)
        if failure:
            state.failed_attempt_id, state.failed_path = attempt_id, path
            raise failure

    async def _finish_context(
        self,
        context: BrowserContext,
        activity: PageActivity | None,
        state: _RunState,
        failure: StepFailed | None,
    ) -> None:
        """Failure snapshot and trace (when asked for), then close the context — always, and
        within FINISH_TIMEOUT_S whatever the page does."""
        try:
            async with asyncio.timeout(FINISH_TIMEOUT_S):
                await self._save_evidence(context, activity, state, failure)
        except Exception as exc:
            log.warning("could not save failure evidence", run_id=state.request.run_id, error=str(exc))
        finally:
            if state.trace is not None:
                state.trace.discard()  # chunks of a trace that was not merged hold secrets in clear
            if state.watchdog is not None:
                await state.watchdog.detach()
            await self.pool.close_context(context)

    async def _save_evidence(
        self,
        context: BrowserContext,
        activity: PageActivity | None,
        state: _RunState,
        failure: StepFailed | None,
    ) -> None:
        tsettings = state.request.loaded.template.settings
        usable = self.pool.connected and not state.crashed and state.page is not None
        if usable and state.watchdog is not None and not state.page_dropped:
            # A script still running in the page would stall the screenshot, the DOM and the trace.
            unblocked = await state.watchdog.unblock(stop_loading=failure is not None)
            state.page_dropped = unblocked is PageState.DROPPED
        usable = usable and not state.page_dropped
        if failure is not None and activity is not None and usable:
            await self._failure_snapshot(state, activity)
        elif failure is not None and activity is not None:
            await self._save_json(state, "console", "console.json", list(activity.console))
            await self._save_json(state, "network", "network.json", list(activity.network))
        if state.domains is not None and not state.domains.empty:
            await self._save_json(state, "blocked_requests", "blocked_requests.json", state.domains.as_dict())
        if state.trace is not None and self.pool.connected:
            keep = tsettings.trace == "always" or failure is not None
            await self._stop_trace(state, keep)

    def _outcome(self, state: _RunState, status: str, failure: StepFailed | None) -> RunOutcome:
        request = state.request
        if state.blocked is not None and state.blocked.total:
            log.info("resources blocked", run_id=request.run_id, blocked=state.blocked.summary())
        if state.domains is not None and not state.domains.empty:
            blocked = state.domains.as_dict()
            log.info(
                "requests outside allowed_domains blocked",
                run_id=request.run_id,
                documents=len(blocked["documents_blocked"]),
                subresources=blocked["subresources_blocked"],
            )
        outputs = state.redactor.data(state.outputs)
        warnings = state.redactor.data(state.warnings)
        if failure is None:
            return RunOutcome(request.run_id, status, outputs, warnings=warnings)
        return RunOutcome(
            request.run_id,
            status,
            outputs,
            error_code=failure.code.code,
            error_message=clean_text(state.redactor.text(failure.message)),
            error_step_path=state.failed_path,
            warnings=warnings,
        )

    # --- control flow ------------------------------------------------------------------------
    async def _run_steps(self, steps: list[Any], prefix: str, state: _RunState) -> None:
        resume_at = state.cursor.at_this_level() if state.cursor else None
        for index, step in enumerate(steps):
            path = f"{prefix}{index}"
            if resume_at is not None:  # resuming: skip what the checkpoint already covers
                target, resume_pass = resume_at
                if index < target:
                    continue
                resume_at = None
                assert state.cursor is not None
                if isinstance(step, RepeatStep) and resume_pass is not None:
                    await self._run_repeat(step, path, state, resume_pass=resume_pass)
                else:
                    state.cursor.finish()  # the checkpointed step itself is done
                continue
            if isinstance(step, RepeatStep):
                await self._run_repeat(step, path, state)
            else:
                await self._run_action(step, path, state)

    async def _run_repeat(
        self, step: RepeatStep, path: str, state: _RunState, resume_pass: int | None = None
    ) -> None:
        """Run the body up to ``max`` times, stopping on the until_missing/while_present condition.

        ``resume_pass``: re-enter the loop at that pass (1-based), with the stop decision the
        checkpoint recorded for it, instead of starting over.
        """
        spec = step.repeat
        try:
            bound = int(render(spec.max, state.scope()))
        except (TypeError, ValueError) as exc:
            state.failed_path = path
            raise StepFailed(Codes.INVALID_STEP_INPUT, f"repeat.max is not a whole number: {exc}") from exc
        first = (resume_pass - 1) if resume_pass else 0
        for index in range(first, bound):
            resuming = resume_pass is not None and index == first
            if resuming:
                assert state.cursor is not None
                depth = len(state.loops)
                saved = state.cursor.loops[depth] if len(state.cursor.loops) > depth else {}
                last_pass = bool(saved.get("last_pass", False))
                state.cursor.descend()
            else:
                if spec.while_present and not await self._present(spec.while_present, path, state):
                    break
                # until_missing is read at the start of a pass: the pass that begins without the
                # selector (the last page, without "next") still runs, and is the last one.
                last_pass = bool(spec.until_missing) and not await self._present(spec.until_missing, path, state)
            state.loops.append({"index": index, "iteration": index + 1, "last_pass": last_pass})
            try:
                await self._run_steps(spec.steps, f"{path}[{index + 1}].", state)
            finally:
                state.loops.pop()
            if last_pass:
                break
        else:  # every pass up to max ran: did the stop condition still ask for more?
            await self._warn_if_cut_short(step, path, bound, state)

    async def _warn_if_cut_short(self, step: RepeatStep, path: str, bound: int, state: _RunState) -> None:
        """A repeat that reached ``max`` while its stop selector still said "more" is a truncated
        result, not a complete one: record a warning so it shows in the result and in ``show``.

        ``until_missing`` is read at the start of a pass, so reaching max means the last pass
        began with the selector present (another pass would have run). ``while_present`` is read
        once more: present now means another pass would have run."""
        spec = step.repeat
        if spec.until_missing is not None:
            condition, selector = "until_missing", spec.until_missing
        elif spec.while_present is not None and await self._present(spec.while_present, path, state):
            condition, selector = "while_present", spec.while_present
        else:
            return
        name = f"repeat {step.id!r}" if step.id else f"repeat at step {path}"
        message = (
            f"{name} stopped at max={bound} passes while its {condition} selector {selector!r} still "
            "matched: later pages or items were not processed (raise max if more were expected)"
        )
        self._warn(state, path, notices.REPEAT_MAX_REACHED, message)
        log.info("repeat cut short by max", run_id=state.request.run_id, step=path, max=bound)

    @staticmethod
    def _warn(state: _RunState, path: str, code: str, message: str) -> None:
        state.warnings.append(notices.run_warning(path, code, state.redactor.text(message)))

    async def _present(self, selector: str, path: str, state: _RunState) -> bool:
        page = self._page(state)
        timeout_s = state.request.loaded.template.settings.step_timeout_s
        try:
            async with asyncio.timeout(timeout_s):  # count() has no timeout of its own
                await settle(page, 5000)
                return await locate(page, selector).count() > 0
        except TimeoutError as exc:
            state.failed_path = path
            await self._unblock(state)
            raise StepFailed(
                Codes.TIMEOUT, f"the page did not answer whether {selector!r} is present within {timeout_s:g} s"
            ) from exc
        except Exception as exc:
            state.failed_path = path
            raise translate(exc, browser_connected=self.pool.connected) from exc

    async def _unblock(self, state: _RunState) -> None:
        """End a script that keeps the page's main thread busy; close the page if that fails."""
        if state.watchdog is None or state.crashed or state.page_dropped or not self.pool.connected:
            return
        state.page_dropped = await state.watchdog.unblock() is PageState.DROPPED

    def _page(self, state: _RunState) -> Page:
        if state.page_dropped:
            raise StepFailed(Codes.PAGE_CRASHED, _DROPPED)
        if state.crashed or state.page is None or state.page.is_closed():
            raise StepFailed(Codes.PAGE_CRASHED, "the page crashed or was closed")
        return state.page

    # --- one step, with retries in place -------------------------------------------------------
    def _max_retries(self, step: ActionStep, state: _RunState) -> int:
        for value in (step.retries, state.request.loaded.template.settings.step_retries):
            if value is not None:
                return value
        return self.settings.step_retries

    async def _run_action(self, step: ActionStep, path: str, state: _RunState) -> None:
        request = state.request
        tsettings = request.loaded.template.settings
        max_retries = self._max_retries(step, state)
        if (
            step.side_effect
            and path in request.unknown_side_effects
            and await self._settle_unknown_side_effect(step, path, state)
        ):
            return  # it happened: recorded as recovered, not executed again
        attempt = 0
        while True:
            attempt += 1
            failure: StepFailed | None = None
            rendered: ActionStep = step
            try:
                rendered = render_step(step, state.scope())
                for selector in _selectors(rendered):
                    check_selector_length(selector, self.settings.max_selector_length)
            except StepFailed as exc:
                failure = exc
            page = self._page(state)
            url_before = page.url
            inputs = state.redactor.data(_step_inputs(rendered))
            attempt_id: int = await self._db(
                self.store.start_step,
                run_id=request.run_id,
                run_attempt=request.run_attempt,
                step_path=path,
                step_id=step.id,
                attempt=attempt,
                action=step.action,
                inputs=inputs,
                url_before=state.redactor.text(url_before),
                token=state.token,
            )
            started = time.monotonic()
            output: Any = None
            skipped = False
            warnings: list[dict[str, Any]] = []
            if failure is None:
                step_ctx = self._step_context(rendered, path, state, attempt_id)
                step_ctx.warn = _collector(warnings, state.redactor)
                assert step_ctx.step_deadline is not None
                budget_s = step_ctx.step_deadline - time.monotonic()
                # The step's timeout holds for every action, also for calls Playwright does not
                # time out (evaluate, count, title, keyboard) on a page whose script never ends.
                bound = asyncio.timeout(budget_s + STEP_GRACE_S)
                try:  # cancelled anywhere here (time limit, cancel): the attempt is still recorded
                    try:
                        async with bound:
                            selector = element_selector(rendered)
                            if rendered.optional and selector and await _missing(page, selector):
                                skipped = True
                            else:
                                output = await handler_for(rendered)(step_ctx, rendered)
                                _raise_if_blocked(state)
                                _check_landing(page, tsettings.allowed_domains)
                                output = self._bounded_output(rendered, output, state)
                    except StepFailed as exc:
                        failure = exc
                        if exc.code is Codes.TIMEOUT:
                            await self._unblock(state)
                    except Exception as raised:
                        exc: BaseException = raised
                        if bound.expired():
                            exc = TimeoutError(
                                f"{step.action} did not finish within its timeout of {budget_s:.1f} s"
                            )
                        if isinstance(exc, TimeoutError | PlaywrightTimeoutError):
                            await self._unblock(state)  # a busy page is the usual reason
                        missing = None
                        selector = element_selector(rendered) or getattr(rendered, "selector", None)
                        if selector and self.pool.connected and not state.crashed and not state.page_dropped:
                            missing = await _missing(page, selector, MISSING_CHECK_TIMEOUT_S)
                        failure = translate(exc, browser_connected=self.pool.connected, element_missing=missing)
                        if state.page_dropped:
                            failure = StepFailed(failure.code, f"{failure.message}; {_DROPPED}")
                        if state.gate is not None and state.gate.error is not None:
                            failure = state.gate.error  # the rate limit, not the page, stopped it
                        failure = _domain_failure(state) or failure  # ERR_BLOCKED_BY_CLIENT: the guard's
                        if state.crashed and not isinstance(failure, InfrastructureError):
                            failure = StepFailed(Codes.PAGE_CRASHED, first_line(exc))
                except asyncio.CancelledError:
                    state.failed_attempt_id, state.failed_path = attempt_id, path
                    reason = "cancelled" if state.interrupt == "cancel" else "interrupted by the run's time limit"
                    if state.interrupt != "lease_lost":
                        try:
                            await self._record_end(state, attempt_id, step, attempt, started, path, "failed",
                                                   StepFailed(Codes.CANCELLED, reason))
                        except Exception as exc:  # being interrupted; the run's record says why
                            log.debug("could not record the interrupted step", error=str(exc))
                    raise
            if failure is not None:
                failure = _blame_proxy(failure, state)
            if failure is None:
                if not skipped:
                    _store_output(state.outputs, rendered, output)
                status = "skipped" if skipped else "succeeded"
                checkpoint = None
                if rendered.action == "navigate" and "~" not in path:
                    state.last_navigation = rendered.url  # type: ignore[attr-defined]
                for warning in warnings:
                    self._warn(state, path, warning["code"], warning["message"])
                if "~" not in path and not skipped and self._wants_checkpoint(step, url_before, page.url, tsettings):
                    checkpoint = await self._checkpoint(path, state)
                await self._record_end(
                    state, attempt_id, step, attempt, started, path, status, None, output, checkpoint, warnings
                )
                return
            if time.monotonic() >= state.deadline and failure.code in (Codes.TIMEOUT, Codes.NAVIGATION_FAILED):
                failure = StepFailed(Codes.RUN_TIMEOUT, f"cut short by the run's timeout_s: {failure.message}")
            if step.side_effect and _may_have_happened(failure):
                # The action was dispatched; whether it took effect is unknown. Never retry blindly.
                await self._record_end(state, attempt_id, step, attempt, started, path, "unknown", failure)
                if isinstance(failure, InfrastructureError) or failure.code is Codes.PAGE_CRASHED or state.crashed:
                    state.failed_attempt_id, state.failed_path = attempt_id, path
                    raise failure  # resumed after the relaunch, where the probe happens
                attempt += 1
                if await self._settle_unknown_side_effect(step, path, state, attempt=attempt):
                    return
                if attempt > max_retries:
                    state.failed_attempt_id, state.failed_path = attempt_id, path
                    raise failure
                continue
            await self._record_end(state, attempt_id, step, attempt, started, path, "failed", failure)
            in_place = failure.code.error_class is ErrorClass.RETRY_IN_PLACE and not state.page_dropped
            if isinstance(failure, InfrastructureError) or not in_place or attempt > max_retries:
                if step.continue_on_error and not isinstance(failure, InfrastructureError):
                    return
                if await self._logged_in_again(path, url_before, failure, state):
                    continue  # the session had expired: logged in, now the step once more
                state.failed_attempt_id = attempt_id
                state.failed_path = path
                raise failure
            delay = self.settings.step_retry_delay_s * (2 ** (attempt - 1))
            await asyncio.sleep(min(delay, max(0.0, state.deadline - time.monotonic())))

    def _step_context(self, step: ActionStep, path: str, state: _RunState, attempt_id: int) -> StepContext:
        tsettings = state.request.loaded.template.settings

        async def save(kind: str, name: str, data: bytes, content_type: str) -> StoredFile:
            return await self._save_artifact(state, attempt_id, kind, name, data, content_type)

        timeout_s = step.timeout_s or tsettings.step_timeout_s
        now = time.monotonic()
        return StepContext(
            page=self._page(state),
            settings=tsettings,
            timeout_s=timeout_s,
            deadline=state.deadline,
            step_deadline=now + min(timeout_s, max(1.0, state.deadline - now)),
            redactor=state.redactor,
            save_artifact=save,
            step_path=path,
            artifact_base=state.artifact_base,
            untraced=state.trace.paused if state.trace is not None else not_traced,
            max_output_bytes=self.settings.max_step_output_bytes,
        )

    def _bounded_output(self, step: ActionStep, output: Any, state: _RunState) -> Any:
        """The step's result as recordable JSON within the step's and the run's size limits
        (``OUTPUT_TOO_LARGE`` / ``OUTPUT_INVALID`` otherwise); counted against the run's budget
        when ``into:`` will store it."""
        output, size = check_step_output(output, self.settings.max_step_output_bytes)
        name = getattr(step, "into", None)
        if name and state.budget is not None:
            accumulate = step.action == "extract" and isinstance(state.outputs.get(name), list)
            state.budget.admit(name, size, accumulate=accumulate)
        return output

    async def _record_end(
        self,
        state: _RunState,
        attempt_id: int,
        step: ActionStep,
        attempt: int,
        started: float,
        path: str,
        status: str,
        failure: StepFailed | None,
        output: Any = None,
        checkpoint: dict[str, Any] | None = None,
        warnings: list[dict[str, Any]] | None = None,
    ) -> None:
        """Finish the attempt's record and, in the same transaction, the checkpoint after it.

        A record the database refuses (not an outage, not a lost lease) is replaced by a minimal
        one that says so, and the run fails ``STORE_WRITE_FAILED``: never a step left
        ``started`` behind a crash."""
        redactor = state.redactor
        url = redactor.text(state.page.url) if state.page and not state.page.is_closed() else None
        message = redactor.text(failure.message) if failure else None
        try:
            await self._db(
                self.store.finish_step,
                attempt_id,
                status=status,
                url_after=url,
                output=_recordable(redactor.data(output)),
                error_code=failure.code.code if failure else None,
                error_message=message,
                retryable=failure.retryable if failure else None,
                token=state.token,
                checkpoint=checkpoint,
                warnings=warnings,
            )
        except (LeaseLost, StoreUnavailable):
            raise
        except StoreError as exc:
            refused = StepFailed(
                Codes.STORE_WRITE_FAILED,
                f"the database refused this step's record ({first_line(exc)}); "
                f"the step {'failed with ' + failure.code.code if failure else 'had ' + status}",
            )
            log.error("step record refused", run_id=state.request.run_id, step=path, error=first_line(exc))
            await self._db(
                self.store.finish_step, attempt_id, status="failed", url_after=None, output=None,
                error_code=refused.code.code, error_message=refused.message, retryable=False, token=state.token,
            )
            state.failed_attempt_id, state.failed_path = attempt_id, path
            raise refused from None
        self._notify(path, step.id, step.action, attempt, status, started, failure, url, redactor)

    def _notify(
        self,
        path: str,
        step_id: str | None,
        action: str,
        attempt: int,
        status: str,
        started: float,
        failure: StepFailed | None,
        url: str | None,
        redactor: Redactor | None = None,
    ) -> None:
        if self.listener is None:
            return
        message = failure.message if failure else None
        if redactor is not None and message:
            message = redactor.text(message)
        self.listener(
            StepEvent(
                step_path=path,
                step_id=step_id,
                action=action,
                attempt=attempt,
                status=status,
                duration_ms=(time.monotonic() - started) * 1000,
                error_code=failure.code.code if failure else None,
                error_message=message,
                url=url,
            )
        )

    # --- sessions ---------------------------------------------------------------------------------
    async def _logged_in_again(self, path: str, url_before: str, failure: StepFailed, state: _RunState) -> bool:
        """When a step failed because the run is logged out (the session check matches nothing),
        run the template's login steps, go back to the step's page and let it try once more.
        A second time for the same step is ``SESSION_EXPIRED``."""
        session = state.request.loaded.template.session
        if session is None or isinstance(failure, InfrastructureError) or failure.code not in _SESSION_SYMPTOMS:
            return False
        if await self._present(session.check, path, state):
            return False  # logged in: the failure is the step's own
        if path in state.relogged:
            raise StepFailed(
                Codes.SESSION_EXPIRED,
                f"still logged out after running the login steps (session check {session.check!r} "
                f"matches nothing); the step failed with {failure.code.code}: {failure.message}",
            )
        state.relogged.add(path)
        log.info("session check failed; logging in again", run_id=state.request.run_id, step=path)
        await self._run_steps(session.login, f"{path}~login.", state)
        if not await self._present(session.check, path, state):
            raise StepFailed(
                Codes.SESSION_EXPIRED,
                f"the login steps ran but the session check {session.check!r} still matches nothing",
            )
        # Back to the page the run meant to be on (a logged-out site may have redirected it).
        target = state.last_navigation or url_before
        if target.startswith(("http://", "https://")):
            await self._page(state).goto(target)
        return True

    # --- checkpoints and side effects ----------------------------------------------------------
    @staticmethod
    def _wants_checkpoint(step: ActionStep, url_before: str, url_after: str, tsettings: Any) -> bool:
        """Explicit checkpoints, every side effect, and (``checkpoints: auto``) every step that
        landed on a new page."""
        if step.checkpoint or step.side_effect:
            return True
        return tsettings.checkpoints == "auto" and url_after != url_before and url_after.startswith("http")

    async def _checkpoint(self, path: str, state: _RunState) -> dict[str, Any]:
        """What a resumed run needs to continue after ``path`` (stored with the step's result)."""
        assert state.context is not None and state.page is not None
        timeout_s = state.request.loaded.template.settings.step_timeout_s
        try:  # reading IndexedDB runs in the page: a busy page would hold the run here
            storage = await asyncio.wait_for(state.context.storage_state(indexed_db=True), timeout_s)
        except TimeoutError:
            await self._unblock(state)
            storage = await asyncio.wait_for(state.context.storage_state(indexed_db=True), timeout_s)
        if state.request.identity is not None:
            await self._store_identity_storage(state, storage)
        state.checkpoint_seq += 1
        checkpoint = Checkpoint(
            path=path,
            url=state.page.url,
            outputs=json.loads(json.dumps(state.outputs, default=str)),
            loops=[dict(loop) for loop in state.loops],
            storage=storage,
            seq=state.checkpoint_seq,
            warnings=list(state.warnings),
        )
        box = self.secret_box if self.secret_box.enabled or not state.redactor else self.checkpoint_box
        return checkpoint.to_record(box, state.redactor)

    async def _settle_unknown_side_effect(
        self, step: ActionStep, path: str, state: _RunState, attempt: int = 1
    ) -> bool:
        """A side effect that started but never reported: probe, never re-run blindly.

        Returns True when its postcondition shows it happened (recorded as recovered); False when
        the template says it is safe to repeat (``on_unknown: retry``); otherwise the run goes to
        ``needs_review``.
        """
        page = self._page(state)
        started = time.monotonic()
        url_before = page.url
        held, detail = False, "no postcondition declared"
        if step.postcondition is not None:
            held, detail = await self._probe(step, state)
        condition = step.postcondition.model_dump(exclude_none=True) if step.postcondition else None
        attempt_id = await self._db(
            self.store.start_step,
            run_id=state.request.run_id,
            run_attempt=state.request.run_attempt,
            step_path=path,
            step_id=step.id,
            attempt=attempt,
            action=step.action,
            inputs={"probe": "postcondition", "postcondition": state.redactor.data(condition)},
            url_before=state.redactor.text(url_before),
            token=state.token,
        )
        if held:
            checkpoint = await self._checkpoint(path, state)
            await self._record_end(
                state, attempt_id, step, attempt, started, path, "succeeded", None,
                {"recovered": True, "detail": detail}, checkpoint,
            )
            return True
        if step.on_unknown == "retry":
            await self._record_end(
                state, attempt_id, step, attempt, started, path, "failed",
                StepFailed(Codes.OUTCOME_UNKNOWN, f"outcome unknown ({detail}); on_unknown: retry"),
            )
            return False
        failure = NeedsReview(
            f"step {step.id or path} ({step.action}) changes the world and may or may not have "
            f"happened before its worker stopped: {detail}. Check it, then resolve the run."
        )
        await self._record_end(state, attempt_id, step, attempt, started, path, "failed", failure)
        state.failed_attempt_id, state.failed_path = attempt_id, path
        raise failure

    async def _probe(self, step: ActionStep, state: _RunState) -> tuple[bool, str]:
        """Check a side effect's postcondition. With a ``url`` the check happens in a second tab,
        so the run's own page (and what was filled in on it) stays as it was."""
        assert step.postcondition is not None and state.context is not None
        condition = render(step.postcondition.model_dump(exclude_none=True), state.scope())
        timeout = min(5000.0, max(1000.0, (state.deadline - time.monotonic()) * 1000))
        probe_page = await state.context.new_page() if condition.get("url") else self._page(state)
        try:
            if condition.get("url"):
                check_url(condition["url"], state.request.loaded.template.settings.allowed_domains)
                await probe_page.goto(condition["url"], timeout=timeout)
            if condition.get("url_matches"):
                await probe_page.wait_for_url(
                    url_matcher(condition["url_matches"]), wait_until="commit", timeout=timeout
                )
            if condition.get("selector"):
                await locate(probe_page, condition["selector"]).first.wait_for(state="attached", timeout=timeout)
            if condition.get("text"):
                await probe_page.get_by_text(condition["text"]).first.wait_for(state="attached", timeout=timeout)
        except StepFailed as exc:
            return False, f"postcondition could not be checked: {exc.message}"
        except Exception as exc:
            return False, f"postcondition does not hold ({first_line(exc)})"
        finally:
            if probe_page is not state.page:
                await probe_page.close()
        return True, "postcondition holds"

    # --- artifacts ---------------------------------------------------------------------------
    async def _save_artifact(
        self, state: _RunState, attempt_id: int | None, kind: str, name: str, data: bytes, content_type: str
    ) -> StoredFile:
        name = state.redactor.text(name)  # a screenshot named after a param
        stored: StoredFile = await self._db(self.artifacts.write, state.request.run_id, name, data)
        await self._db(
            self.store.add_artifact,
            run_id=state.request.run_id,
            step_attempt_id=attempt_id,
            kind=kind,
            path=stored.path,
            content_type=content_type,
            size=stored.size,
            sha256=stored.sha256,
            token=state.token,
        )
        return stored

    async def _save_json(self, state: _RunState, kind: str, name: str, value: Any) -> None:
        data = json.dumps(state.redactor.data(value), indent=2, default=str).encode()
        await self._save_artifact(state, state.failed_attempt_id, kind, name, data, "application/json")

    async def _failure_snapshot(self, state: _RunState, activity: PageActivity) -> None:
        """Screenshot, DOM, console and network of the failing moment, linked to the failing step."""
        page = state.page
        assert page is not None
        attempt_id = state.failed_attempt_id
        try:  # a page still loading (the usual reason for a timeout) would stall the capture
            assert state.context is not None
            cdp = await state.context.new_cdp_session(page)
            try:
                await asyncio.wait_for(cdp.send("Page.stopLoading"), 1.0)
            finally:
                await asyncio.wait_for(cdp.detach(), 1.0)
        except Exception as exc:
            log.debug("could not stop loading before the snapshot", error=first_line(exc))
        try:
            png = await page.screenshot(full_page=True, timeout=SNAPSHOT_TIMEOUT_S * 1000)
            await self._save_artifact(state, attempt_id, "failure_screenshot", "failure.png", png, "image/png")
        except Exception as exc:
            log.info("failure screenshot unavailable", error=first_line(exc))
        try:
            html = await asyncio.wait_for(page.content(), SNAPSHOT_TIMEOUT_S)
            dom = clean_text(state.redactor.text(html)).encode()  # a lone surrogate would not encode
            await self._save_artifact(state, attempt_id, "dom", "failure.html", dom, "text/html")
        except Exception as exc:
            log.info("failure DOM unavailable", error=first_line(exc))
        await self._save_json(state, "console", "console.json", list(activity.console))
        await self._save_json(state, "network", "network.json", list(activity.network))

    async def _stop_trace(self, state: _RunState, keep: bool) -> None:
        assert state.trace is not None
        scratch = await state.trace.stop(keep)
        if scratch is None:
            return
        try:
            await asyncio.to_thread(state.redactor.zip_file, scratch)
            data = await asyncio.to_thread(scratch.read_bytes)
        finally:
            scratch.unlink(missing_ok=True)
        await self._save_artifact(state, state.failed_attempt_id, "trace", "trace.zip", data, "application/zip")


# --- helpers ---------------------------------------------------------------------------------
_DROPPED = "the page stopped answering (a script that never ends) and was closed"

#: Step failures that a logged-out session typically causes (the element or page is not there).
_SESSION_SYMPTOMS = frozenset({
    Codes.SELECTOR_NOT_FOUND, Codes.ASSERTION_FAILED, Codes.HTTP_4XX, Codes.BLOCKED,
    Codes.ELEMENT_NOT_ACTIONABLE, Codes.TIMEOUT,
})

#: Failures that happen before an action reaches the page: nothing can have taken effect.
_BEFORE_DISPATCH = frozenset({
    Codes.SELECTOR_NOT_FOUND, Codes.INVALID_STEP_INPUT, Codes.URL_DENIED, Codes.DOMAIN_DENIED,
    Codes.PATH_DENIED, Codes.EVAL_DISABLED,
})


def _blame_proxy(failure: StepFailed, state: _RunState) -> StepFailed:
    """A connection error, or a 407, while a proxy is in use is the proxy's failure."""
    if state.proxy is None or failure.code is Codes.PROXY_FAILED:
        return failure
    proxy_kind = classify_error(failure.message) in (REFUSED, TUNNEL, AUTH)
    if (failure.code in (Codes.NAVIGATION_FAILED, Codes.ACTION_FAILED, Codes.TIMEOUT) and proxy_kind) or (
        failure.code is Codes.HTTP_4XX and "HTTP 407" in failure.message
    ):
        return StepFailed(Codes.PROXY_FAILED, f"via proxy {state.proxy.label}: {failure.message}")
    return failure


def _start_host(state: _RunState) -> str | None:
    """The host of the first navigation (for proxies sticky per domain), when it is known."""
    from urllib.parse import urlsplit

    first = state.request.loaded.template.steps[0]
    if getattr(first, "action", None) != "navigate":
        return None
    try:
        return urlsplit(str(render(first.url, state.scope()))).hostname
    except Exception:
        return None


def _may_have_happened(failure: StepFailed) -> bool:
    return failure.code not in _BEFORE_DISPATCH


def _selectors(step: ActionStep) -> list[str]:
    """Every selector-valued field of a rendered step (built from params at run time)."""
    found = [getattr(step, name, None) for name in ("selector", "within")]
    fields = getattr(step, "fields", None) or {}
    found += [spec.selector for spec in fields.values() if not isinstance(spec, str)]
    return [s for s in found if isinstance(s, str)]


def _step_inputs(step: ActionStep) -> dict[str, Any]:
    return step.model_dump(exclude_none=True, exclude_defaults=True, by_alias=True) | {"action": step.action}


async def _missing(page: Page, selector: str, timeout_s: float | None = None) -> bool | None:
    """Whether nothing matches ``selector``; None when the page did not tell within ``timeout_s``."""
    try:
        async with asyncio.timeout(timeout_s):
            await settle(page, 5000)
            return await locate(page, selector).count() == 0
    except TimeoutError:
        return None
    except Exception:
        return False


def _domain_failure(state: _RunState) -> StepFailed | None:
    """DOMAIN_DENIED for documents the browser refused to send since the last report, or None."""
    if state.domains is None:
        return None
    urls = state.domains.take_unreported()
    if not urls:
        return None
    shown = ", ".join(urls[:3]) + (f" and {len(urls) - 3} more" if len(urls) > 3 else "")
    return StepFailed(
        Codes.DOMAIN_DENIED,
        f"blocked before it was sent: a document request to {shown} "
        f"(host outside allowed_domains: {', '.join(state.domains.allowed_domains)})",
    )


def _raise_if_blocked(state: _RunState) -> None:
    failure = _domain_failure(state)
    if failure is not None:
        raise failure


def _check_landing(page: Page, allowed_domains: list[str]) -> None:
    """A step that ended on a host outside allowed_domains (a click, a redirect) fails."""
    if allowed_domains and page.url.startswith(("http://", "https://")):
        check_url(page.url, allowed_domains)


def _store_output(outputs: dict[str, Any], step: ActionStep, value: Any) -> None:
    """``into:`` stores the value; an extract into the same name accumulates (pagination)."""
    name = getattr(step, "into", None)
    if not name:
        return
    if step.action == "extract" and isinstance(outputs.get(name), list):
        outputs[name] = [*outputs[name], *value]
    else:
        outputs[name] = value


def _collector(into: list[dict[str, Any]], redactor: Redactor) -> Callable[[str, str], None]:
    """A step context's ``warn``: keeps the step's warnings (redacted) for its record."""

    def warn(code: str, message: str) -> None:
        into.append(notices.step_warning(code, redactor.text(message)))

    return warn


def _recordable(value: Any) -> Any:
    """What the step record keeps of an output: the value, or a summary when it is large (the
    run's outputs hold it whole, within BROWSERQ_MAX_RUN_OUTPUT_BYTES)."""
    if value is None:
        return None
    encoded = dumps(value)
    if len(encoded) <= MAX_RECORDED_OUTPUT_BYTES:
        return json.loads(encoded)
    return {"truncated": True, "bytes": len(encoded), "type": type(value).__name__}
