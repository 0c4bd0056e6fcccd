"""One action step, with its retries in place: :class:`StepAttempt`.

It runs ONE step on an open context and says how it went (:class:`StepOutcome`): the template's
walk (:class:`browserq.runner.walker.StepWalker`) calls it for each action step, and it can be
called on its own, one step at a time, on a context opened by
:class:`browserq.runner.context.ContextLease` — every attempt is recorded through the run's
journal either way. This is where the main rule lives: a step that fails because of the page or
the template is recorded with its error code and retried in place when the code allows; it never
touches the browser. A side effect whose outcome is unknown is probed, never re-run blindly; an
action's exception is translated once, here (:meth:`RunParts.failure`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
from playwright.async_api import Page

from browserq.actions import StepContext, element_selector, not_noted, not_traced, notices
from browserq.actions.files import RunFiles
from browserq.actions.outputs import check_step_output
from browserq.browsers.api import TimeoutError as PlaywrightTimeoutError
from browserq.browsers.errors import first_line
from browserq.errors import Codes, ErrorClass, InfrastructureError, NeedsReview, StepFailed
from browserq.guards import check_selector_length
from browserq.journal import StepRecord, StoredFile, StoreUnavailable
from browserq.proxies import AUTH, REFUSED, TUNNEL, classify_error
from browserq.redact import Redactor
from browserq.runner.checkpointer import Checkpointer
from browserq.runner.page import (
    DROPPED,
    check_landing,
    current_page,
    domain_failure,
    missing,
    raise_if_blocked,
    run_handler,
    step_inputs,
    warn,
)
from browserq.runner.parts import RunParts
from browserq.runner.record import Attempted, StepRecorder
from browserq.runner.state import RunState, StepOutcome, StepResult
from browserq.templates import ActionStep, NavigateStep, render_step, rendered_number, selector_text

if TYPE_CHECKING:
    from browserq.runner.recovery import Recovery

log = structlog.get_logger(__name__)

#: A step attempt is cut this long after its timeout_s: Playwright's own timeout (with its more
#: useful message) fires first; the cut catches calls that have none (evaluate, count, title).
STEP_GRACE_S = 1.0
#: How long deciding "is the element missing?" after a failure may take.
MISSING_CHECK_TIMEOUT_S = 6.0

#: Failures that happen before an action reaches the page: nothing can have taken effect.
_BEFORE_DISPATCH = frozenset({
    Codes.SELECTOR_NOT_FOUND, Codes.INVALID_STEP_INPUT, Codes.URL_DENIED, Codes.DOMAIN_DENIED,
    Codes.PATH_DENIED, Codes.EVAL_DISABLED, Codes.UPLOAD_FILE_MISSING, Codes.REF_STALE, Codes.REF_UNKNOWN,
})


@dataclass
class Attempt:
    """One try of a step: what it ran with, and how it went."""

    attempted: Attempted  # which step, which try, when it began
    rendered: ActionStep
    record: StepRecord
    page: Page
    url_before: str
    failure: StepFailed | None = None
    output: Any = None
    skipped: bool = False
    warnings: list[dict[str, Any]] = field(default_factory=list)
    deadline: float = 0.0  # when the attempt is cut (its timeout + grace): what is left bounds its checks

    @property
    def number(self) -> int:
        return self.attempted.number


class StepAttempt:
    """Run one action step: try, record, decide (retry in place, probe, fail the run).

    ``recovery`` settles side effects of unknown outcome and logs in again when the session
    expired (it may walk the template's login steps, which come back here)."""

    def __init__(self, parts: RunParts, recorder: StepRecorder, checkpointer: Checkpointer,
                 recovery: Recovery) -> None:
        self.parts = parts
        self.settings = parts.settings
        self.recorder = recorder
        self.checkpointer = checkpointer
        self.recovery = recovery

    async def run(self, step: ActionStep, path: str, state: RunState) -> StepResult:
        """Run ``step`` (at ``path``) on the run's open page, with its retries in place; every
        attempt is recorded. A failure that ends the run here is returned, not raised (the run's
        record points at it: ``state.failed``); a lost lease, an unavailable database or a
        cancel still raise."""
        try:
            return await self._run_action(step, path, state)
        except NeedsReview as exc:
            return StepResult(StepOutcome.NEEDS_REVIEW, exc)
        except StepFailed as exc:
            return StepResult(StepOutcome.FAILED, exc)

    def _max_retries(self, step: ActionStep, state: RunState) -> int:
        """Retries in place for the step: its own, else the template's, else BROWSERQ_STEP_RETRIES."""
        for value in (step.retries, state.request.loaded.template.settings.step_retries):
            if value is not None:
                return value
        return self.settings.step_retries

    async def _run_action(self, step: ActionStep, path: str, state: RunState) -> StepResult:
        """Try the step until it succeeds, its failure may not be retried in place, or its
        retries are spent (then it raises the failure, unless the step may fail)."""
        if (
            step.side_effect
            and path in state.request.unknown_side_effects
            and await self.recovery.settle_unknown_side_effect(step, path, state)
        ):
            return StepResult(StepOutcome.RECOVERED)  # it happened: recorded, not executed again
        max_retries = self._max_retries(step, state)
        attempt = 0
        while True:
            attempt += 1
            tried = await self._try_step(step, path, state, attempt)
            if tried.failure is None:
                await self._succeeded(step, path, state, tried)
                return StepResult(StepOutcome.SKIPPED if tried.skipped else StepOutcome.SUCCEEDED, None, tried.output)
            failure = tried.failure
            if time.monotonic() >= state.deadline and failure.code in (Codes.TIMEOUT, Codes.NAVIGATION_FAILED):
                tried.failure = StepFailed(Codes.RUN_TIMEOUT, f"cut short by the run's timeout_s: {failure.message}")
            if step.side_effect and _may_have_happened(tried.failure):
                attempt += 1  # the probe is an attempt of its own
                if await self._unknown_outcome(step, path, state, tried, attempt, max_retries):
                    return StepResult(StepOutcome.RECOVERED)
                continue
            then = await self._failed(step, path, state, tried, max_retries)
            if then == "done":
                return StepResult(StepOutcome.CONTINUED, tried.failure)
            if then == "retry":
                delay = self.settings.step_retry_delay_s * (2 ** (attempt - 1))
                await asyncio.sleep(min(delay, max(0.0, state.deadline - time.monotonic())))

    async def _try_step(self, step: ActionStep, path: str, state: RunState, number: int) -> Attempt:
        """Render the step, record its start, run it: one attempt, its failure translated."""
        failure: StepFailed | None = None
        rendered: ActionStep = step
        try:
            rendered = render_step(step, state.scope())
            for selector in _selectors(rendered):
                check_selector_length(selector, self.settings.max_selector_length)
        except StepFailed as exc:
            failure = exc
        if number > 1 and state.browser.trace is not None:
            await state.browser.trace.retrying()  # trace: on_failure starts at the first retry
        page = current_page(state)
        url_before = page.url
        record = await state.journal.step_started(
            path=path,
            step_id=step.id,
            attempt=number,
            action=step.action,
            inputs=step_inputs(rendered),
            url_before=url_before,
            durable=bool(step.side_effect),  # a redelivered run must find it before it probes
        )
        attempted = Attempted(path, step.id, step.action, number, time.monotonic())
        tried = Attempt(attempted, rendered, record, page, url_before, failure=failure)
        self.recorder.started(state, attempted, url_before)
        if failure is None:
            await self._dispatch(step, path, state, tried)
        if tried.failure is not None:
            tried.failure = _blame_proxy(tried.failure, state)
        return tried

    async def _dispatch(self, step: ActionStep, path: str, state: RunState, tried: Attempt) -> None:
        """Run the action within the step's timeout; its failure lands in ``tried.failure``."""
        ctx = self._step_context(tried.rendered, path, state, tried.record)
        ctx.warn = _collector(tried.warnings, state.redactor)
        assert ctx.step_deadline is not None
        budget_s = ctx.step_deadline - time.monotonic()
        tried.deadline = ctx.step_deadline + STEP_GRACE_S
        # The step's timeout holds for every action, also for calls Playwright does not
        # time out (evaluate, count, title, keyboard) on a page whose script never ends.
        bound = asyncio.timeout(budget_s + STEP_GRACE_S)
        try:  # cancelled anywhere here (time limit, cancel): the attempt is still recorded
            try:
                async with bound:
                    await self._act(ctx, state, tried)
            except StepFailed as exc:
                tried.failure = exc
                if exc.code is Codes.TIMEOUT:
                    await self.parts.unblock(state)
            except StoreUnavailable:
                raise  # not the step's failure: the attempt stops (see TemplateRunner)
            except Exception as raised:
                error: BaseException = raised
                if bound.expired():
                    error = TimeoutError(f"{step.action} did not finish within its timeout of {budget_s:.1f} s")
                tried.failure = await self._failure_of(error, state, tried)
        except asyncio.CancelledError:
            await self._record_interrupted(step, path, state, tried)
            raise

    async def _act(self, ctx: StepContext, state: RunState, tried: Attempt) -> None:
        """The action itself (or its skip, for an ``optional`` step whose element is missing)."""
        rendered, page = tried.rendered, tried.page
        selector = element_selector(rendered)
        if rendered.optional and selector and await missing(page, selector):
            tried.skipped = True
            return
        output = await run_handler(ctx, state, rendered)
        raise_if_blocked(state)
        check_landing(state.browser.page or page, state.request.loaded.template.settings.allowed_domains)
        tried.output = self._bounded_output(rendered, output, state)

    async def _failure_of(self, exc: BaseException, state: RunState, tried: Attempt) -> StepFailed:
        """What an exception from an action means: translated, then told apart from what
        the run's own guards (crash, dropped page, rate limit, allowed_domains) did."""
        browser = state.browser
        # A busy page is the usual reason; then the timeout is the page's (TIMEOUT), not the element's.
        busy = isinstance(exc, TimeoutError | PlaywrightTimeoutError) and await self.parts.unblock(state)
        element_missing = None
        selector = element_selector(tried.rendered) or getattr(tried.rendered, "selector", None)
        if selector and not busy and self.parts.pool.connected and not browser.crashed and not browser.page_dropped:
            check_s = min(MISSING_CHECK_TIMEOUT_S, max(1.5, tried.deadline - time.monotonic()))
            element_missing = await missing(tried.page, selector, check_s)
        failure = self.parts.failure(exc, element_missing=element_missing)
        if element_missing and selector and failure.code is Codes.SELECTOR_NOT_FOUND:  # which one, readably
            failure = StepFailed(failure.code, f"{failure.message} (nothing matches {selector_text(selector)})")
        if browser.page_dropped:
            failure = StepFailed(failure.code, f"{failure.message}; {DROPPED}")
        if browser.gate is not None and (gated := browser.gate.error) is not None:  # no rate budget; no limits Redis
            failure = gated if isinstance(gated, StepFailed) else StepFailed(Codes.LIMITS_UNAVAILABLE, str(gated))
        failure = domain_failure(state) or failure  # ERR_BLOCKED_BY_CLIENT: the guard's
        if browser.crashed and not isinstance(failure, InfrastructureError):
            failure = StepFailed(Codes.PAGE_CRASHED, first_line(exc))
        return failure

    async def _record_interrupted(self, step: ActionStep, path: str, state: RunState, tried: Attempt) -> None:
        """The attempt was cancelled (time limit, cancel): its record says so, unless the lease
        is lost (then nothing may be written)."""
        state.fail_at(tried.record, path)
        if (kind := state.interrupt.kind) in ("lease_lost", "store_unavailable"):
            return
        reason = "cancelled" if kind == "cancel" else "interrupted by the run's time limit"
        try:
            await self.recorder.end(state, tried.record, tried.attempted, "failed", StepFailed(Codes.CANCELLED, reason))
        except Exception as exc:  # being interrupted; the run's record says why
            log.debug("could not record the interrupted step", error=str(exc))

    async def _succeeded(self, step: ActionStep, path: str, state: RunState, tried: Attempt) -> None:
        """Keep the output, the warnings and (when due) a checkpoint; record the success."""
        rendered = tried.rendered
        if not tried.skipped:
            _store_output(state.outputs, rendered, tried.output)
        status = "skipped" if tried.skipped else "succeeded"
        checkpoint = None
        if isinstance(rendered, NavigateStep) and "~" not in path:
            state.last_navigation = rendered.url
        for warning in tried.warnings:
            warn(state, path, warning["code"], warning["message"])
        tsettings = state.request.loaded.template.settings
        landed = state.browser.page if state.browser.page is not None else tried.page  # opens: tab
        reason = self.checkpointer.reason(step, tried.url_before, landed.url, tsettings)
        if "~" not in path and not tried.skipped and self.checkpointer.due(reason, state):
            checkpoint = await self.checkpointer.take(path, state, auto=reason == "auto")
        await self.recorder.end(state, tried.record, tried.attempted, status, None, tried.output, checkpoint,
                                tried.warnings)

    async def _unknown_outcome(
        self, step: ActionStep, path: str, state: RunState, tried: Attempt, probe_attempt: int, max_retries: int
    ) -> bool:
        """A side effect failed after it was dispatched: whether it took effect is unknown.
        True when the probe shows it happened; False to try it again; raises otherwise."""
        failure = tried.failure
        assert failure is not None
        await self.recorder.end(state, tried.record, tried.attempted, "unknown", failure)
        if isinstance(failure, InfrastructureError) or failure.code is Codes.PAGE_CRASHED or state.browser.crashed:
            state.fail_at(tried.record, path)
            raise failure  # resumed after the relaunch, where the probe happens
        if await self.recovery.settle_unknown_side_effect(step, path, state, attempt=probe_attempt):
            return True
        if probe_attempt > max_retries:
            state.fail_at(tried.record, path)
            raise failure
        return False

    async def _failed(self, step: ActionStep, path: str, state: RunState, tried: Attempt, max_retries: int) -> str:
        """Record the failure, then: ``"retry"`` in place, ``"again"`` (logged in anew, no
        delay), ``"done"`` (``continue_on_error``); raises when the run fails here."""
        failure = tried.failure
        assert failure is not None
        await self.recorder.end(state, tried.record, tried.attempted, "failed", failure)
        in_place = failure.code.error_class is ErrorClass.RETRY_IN_PLACE and not state.browser.page_dropped
        if isinstance(failure, InfrastructureError) or not in_place or tried.number > max_retries:
            if step.continue_on_error and not isinstance(failure, InfrastructureError):
                return "done"
            if await self.recovery.logged_in_again(path, tried.url_before, failure, state):
                return "again"  # the session had expired: logged in, now the step once more
            state.fail_at(tried.record, path)
            raise failure
        return "retry"

    def _step_context(self, step: ActionStep, path: str, state: RunState, record: StepRecord) -> StepContext:
        """What the action sees: the page, its time budget, the journal's artifact door."""
        tsettings = state.request.loaded.template.settings

        async def save(kind: str, name: str, data: bytes, content_type: str) -> StoredFile:
            return await state.journal.artifact(record, kind, name, data, content_type)

        own = step.timeout_s
        timeout_s = (rendered_number(own, "timeout_s") if own is not None else 0) or tsettings.step_timeout_s
        if state.files is None:  # the run attempt's file limits and artifact reader (download, upload)
            state.files = RunFiles.of(self.settings, state.request.run_id, state.journal.artifacts.read_bytes)
        state.files.step_path = path
        now = time.monotonic()
        trace = state.browser.trace
        return StepContext(
            page=current_page(state),
            settings=tsettings,
            timeout_s=timeout_s,
            deadline=state.deadline,
            step_deadline=now + min(timeout_s, max(1.0, state.deadline - now)),
            redactor=state.redactor, save_artifact=save, step_path=path,
            artifact_base=state.journal.artifact_base,
            untraced=trace.paused if trace is not None else not_traced,
            max_output_bytes=self.settings.max_step_output_bytes,
            tabs=state.browser.tabs, files=state.files, refs=state.browser.refs,
            note=state.browser.dialogs.note if state.browser.dialogs is not None else not_noted,
        )

    def _bounded_output(self, step: ActionStep, output: Any, state: RunState) -> Any:
        """The step's result as recordable JSON within the step's and the run's size limits
        (``OUTPUT_TOO_LARGE`` / ``OUTPUT_INVALID`` otherwise); counted against the run's budget
        when ``into:`` will store it."""
        output, size = check_step_output(output, self.settings.max_step_output_bytes)
        name = getattr(step, "into", None)
        if name and state.budget is not None:
            accumulate = step.action == "extract" and isinstance(state.outputs.get(name), list)
            state.budget.admit(name, size, accumulate=accumulate)
        return output


def _blame_proxy(failure: StepFailed, state: RunState) -> StepFailed:
    """A connection error, or a 407, while a proxy is in use is the proxy's failure."""
    proxy = state.browser.proxy
    if proxy is None or failure.code is Codes.PROXY_FAILED:
        return failure
    proxy_kind = classify_error(failure.message) in (REFUSED, TUNNEL, AUTH)
    if (failure.code in (Codes.NAVIGATION_FAILED, Codes.ACTION_FAILED, Codes.TIMEOUT) and proxy_kind) or (
        failure.code is Codes.HTTP_4XX and "HTTP 407" in failure.message
    ):
        return StepFailed(Codes.PROXY_FAILED, f"via proxy {proxy.label}: {failure.message}")
    return failure


def _may_have_happened(failure: StepFailed) -> bool:
    """Whether the action may have reached the page (then a side effect's outcome is unknown)."""
    return failure.code not in _BEFORE_DISPATCH


def _selectors(step: ActionStep) -> list[str]:
    """Every selector-valued field of a rendered step (a locator mapping as its readable text)."""
    found = [getattr(step, name, None) for name in ("selector", "within")]
    fields = getattr(step, "fields", None) or {}
    found += [spec.selector for spec in fields.values() if not isinstance(spec, str)]
    return [selector_text(s) for s in found if s is not None]


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
