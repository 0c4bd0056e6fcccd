"""Executing one run attempt of a template: open → walk → finish, top to bottom.

:class:`TemplateRunner` is built from named parts, each given what it needs in its constructor
(:class:`RunParts` is the bundle of the process's services). One run: the journal is opened
(:class:`browserq.journal.Journals`); the :class:`ContextLease` opens a fresh context (identity,
proxy, limits, trace, allowed_domains guard, watchdog); the :class:`StepWalker` runs the steps
within the run's ``timeout_s`` — each action step through :class:`StepAttempt` (its retries,
checkpoints and side-effect rules), each wait for a person through :class:`Handoff`, a resume
through :class:`Recovery` — while the heartbeat renews the lease; then the finish:
:class:`Evidence`, identity storage, proxy health, the outcome. Everything persistent goes
through the run's journal; the runner never names the store. Only an
:class:`InfrastructureError` (the browser itself is gone) leaves the pool to relaunch Chromium,
and even then only this run is affected.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

from browserq.actions.outputs import OutputBudget
from browserq.browsers.errors import first_line
from browserq.browsers.pool import BrowserPool
from browserq.errors import Codes, NeedsReview, StepFailed, StoreError
from browserq.journal import ArtifactStore, Journals, LeaseLost, RunRecords, StoreUnavailable
from browserq.journal.entries import Entry
from browserq.limits import RateLimiter
from browserq.proxies import ProxyManager
from browserq.recordable import clean_text
from browserq.redact import Redactor
from browserq.redact import active as active_redactor
from browserq.run_events import ListenerObserver, Observers, StepListener
from browserq.runner.attempt import StepAttempt
from browserq.runner.checkpoint import ResumeCursor
from browserq.runner.checkpointer import Checkpointer
from browserq.runner.conditions import Conditions
from browserq.runner.context import ContextLease
from browserq.runner.evidence import Evidence
from browserq.runner.handoff import Handoff
from browserq.runner.heartbeat import heartbeat
from browserq.runner.live_view import LiveViews
from browserq.runner.page import raise_if_blocked
from browserq.runner.parts import RunParts
from browserq.runner.record import StepRecorder
from browserq.runner.recovery import Recovery
from browserq.runner.state import RunOutcome, RunRequest, RunState
from browserq.runner.storage import digest
from browserq.runner.walker import StepWalker
from browserq.secrets import SecretBox
from browserq.settings import Settings

log = structlog.get_logger(__name__)


class TemplateRunner:
    """Runs template runs on a browser pool; records them through one journal per attempt.

    ``records`` (the :class:`RunRecords`: the store's repositories a run's records write) is
    handed on to :class:`Journals` unopened: only the journals write to them."""

    def __init__(
        self,
        pool: BrowserPool,
        records: RunRecords,
        artifacts: ArtifactStore,
        settings: Settings,
        listener: StepListener | None = None,
        secret_box: SecretBox | None = None,
        rate_limiter: RateLimiter | None = None,
        proxies: ProxyManager | None = None,
        checkpoint_box: SecretBox | None = None,
        observers: Observers | None = None,
    ) -> None:
        observers = observers if observers is not None else Observers()
        if listener is not None:
            observers.add(ListenerObserver(listener))
        secret_box = secret_box or SecretBox(settings.secret_key)
        self.parts = RunParts(
            pool=pool,
            settings=settings,
            observers=observers,
            secret_box=secret_box,
            # Without BROWSERQ_SECRET_KEY, checkpoints of runs with secrets are encrypted with a
            # key that exists only in this process (see Checkpoint.to_record): never in clear.
            checkpoint_box=checkpoint_box or (secret_box if secret_box.enabled else SecretBox.for_this_process()),
            rate_limiter=rate_limiter,
            proxies=proxies if proxies is not None and proxies.enabled else None,
        )
        self.journals = Journals(records, artifacts, settings)
        parts = self.parts
        recorder = StepRecorder(parts)
        self.context = ContextLease(parts)
        self.checkpointer = Checkpointer(parts, self.context)
        self.conditions = Conditions(parts, recorder)
        self.live = LiveViews(settings, self.journals)
        self.recovery = Recovery(parts, recorder, self.checkpointer, self.conditions, walk=self._walk)
        self.attempt = StepAttempt(parts, recorder, self.checkpointer, self.recovery)
        self.handoff = Handoff(parts, recorder, self.checkpointer, self.conditions, self.live)
        self.walker = StepWalker(self.attempt, self.conditions, self.handoff)
        self.evidence = Evidence(pool)

    # What callers and tests read (and a test swaps) of the runner: the parts' own.
    @property
    def settings(self) -> Settings:
        return self.parts.settings

    @property
    def pool(self) -> BrowserPool:
        return self.parts.pool

    @property
    def observers(self) -> Observers:
        return self.parts.observers

    @property
    def artifacts(self) -> ArtifactStore:
        return self.journals.artifacts

    @artifacts.setter
    def artifacts(self, artifacts: ArtifactStore) -> None:
        self.journals.artifacts = artifacts

    async def _walk(self, steps: list[Any], prefix: str, state: RunState) -> None:
        """Recovery's way back into the walk (the template's login steps)."""
        await self.walker.run_steps(steps, prefix, state)

    # --- one run: open → walk → finish ------------------------------------------------------
    async def run(self, request: RunRequest) -> RunOutcome:
        """Execute (or resume) a run and return its outcome; the caller records the final status.

        While it runs, its redactor scrubs every log line of this process (Celery's included)."""
        redactor = Redactor({name: request.params.get(name) for name in request.secret_names})
        with active_redactor(redactor):
            return await self._run(request, redactor)

    async def _run(self, request: RunRequest, redactor: Redactor) -> RunOutcome:
        """Heartbeat on, the attempt, heartbeat off, then the finish."""
        state = self.new_state(request, redactor)
        main = asyncio.current_task()
        assert main is not None
        beat = asyncio.create_task(heartbeat(state, main)) if request.token is not None else None
        try:
            failure, status = await self._attempt(state, main)
        finally:
            if beat is not None:
                beat.cancel()
        return await self._finish(state, status, failure)

    def new_state(self, request: RunRequest, redactor: Redactor) -> RunState:
        """The attempt's memory and journal; a resumed run starts from its checkpoint's."""
        journal = self.journals.open(
            run_id=request.run_id,
            run_attempt=request.run_attempt,
            token=request.token,
            redactor=redactor,
            identity=request.identity,
            lease_ttl_s=request.lease_ttl_s,
        )
        timeout_s = request.loaded.template.settings.timeout_s
        state = RunState(request=request, redactor=redactor, deadline=time.monotonic() + timeout_s, journal=journal)
        if request.resume is not None:
            state.outputs = dict(request.resume.outputs)
            state.warnings = list(request.resume.warnings)
            state.cursor = ResumeCursor(request.resume)
            state.checkpoint_seq = request.resume.seq
        if request.identity_storage:
            state.identity_storage_digest = digest(request.identity_storage)
        state.budget = OutputBudget.of(state.outputs, self.settings.max_run_output_bytes)
        return state

    async def _attempt(self, state: RunState, main: asyncio.Task[Any]) -> tuple[StepFailed | None, str]:
        """Open the context and walk the steps; return ``(failure, status)`` — whatever ended the run."""
        try:
            await self.context.open(state)
            return await self._walk_in_time(state)
        except NeedsReview as exc:
            return exc, "needs_review"
        except StepFailed as exc:
            return exc, "failed"
        except LeaseLost:
            state.interrupt.kind = "lease_lost"
            return None, "failed"
        except StoreUnavailable as exc:  # past the retry window: stop, resume when it is back
            state.interrupt.kind, state.interrupt.reason = "store_unavailable", str(exc)
            return None, "failed"
        except asyncio.CancelledError:
            if state.interrupt.kind is None:
                # Interrupted from outside (Celery's soft time limit, shutdown): still recorded.
                return StepFailed(Codes.RUN_TIMEOUT, "the run was interrupted before it finished (time limit)"), "failed"
            main.uncancel()  # our own heartbeat interrupted the run; handled here
            if state.interrupt.kind == "cancel":
                return StepFailed(Codes.CANCELLED, state.interrupt.reason), "cancelled"
            if state.interrupt.kind == "handover":
                return None, "handed_over"
            return None, "failed"
        except Exception as exc:
            return self._run_failure(exc, state), "failed"

    def _run_failure(self, exc: Exception, state: RunState) -> StepFailed:
        """An exception that left the steps untranslated (setup, a page check, the store)."""
        if isinstance(exc, StoreError) and not isinstance(exc, StoreUnavailable):
            # The database refused a record (not an outage).
            log.error("store write refused", run_id=state.request.run_id, error=first_line(exc))
            return StepFailed(Codes.STORE_WRITE_FAILED, f"the database refused a record: {first_line(exc)}")
        failure = self.parts.failure(exc)
        if failure.code is Codes.INTERNAL and not isinstance(exc, StoreUnavailable):
            log.exception("unexpected error in run", run_id=state.request.run_id)
        return failure

    async def _walk_in_time(self, state: RunState) -> tuple[StepFailed | None, str]:
        """Resume (when asked) and walk every step, all within the run's ``timeout_s``."""
        request = state.request
        tsettings = request.loaded.template.settings
        try:
            async with asyncio.timeout(tsettings.timeout_s) as timer:
                # A wait for a person holds this clock and gives the time waited back.
                state.human.run_timer, state.human.base_deadline = timer, state.deadline
                async with self.live.watched(state):  # the live view of a running run, when enabled
                    if request.resume is not None:
                        await self.recovery.restore(request.resume, state)
                        # a wait the page asks for (handed over, or its worker lost) comes again
                        await self.handoff.check_trigger(request.resume.path, state, None)
                    await self.walker.run_steps(request.loaded.template.steps, "", state)
                raise_if_blocked(state)  # a navigation the last step started, refused since
            return None, "completed"
        except TimeoutError:
            waited = f" (plus {state.human.waited_s:.0f} s waiting for people)" if state.human.waited_s else ""
            return StepFailed(
                Codes.RUN_TIMEOUT, f"the run did not finish within timeout_s={tsettings.timeout_s:g}{waited}"
            ), "failed"

    async def _finish(self, state: RunState, status: str, failure: StepFailed | None) -> RunOutcome:
        """Evidence, identity storage and proxy health, then the outcome (every record flushed).
        A run whose lease was lost writes nothing more: another worker owns it now."""
        request, context = state.request, state.browser.context
        if state.interrupt.kind in ("lease_lost", "store_unavailable"):
            await self.context.drop(state)
            if state.interrupt.kind == "store_unavailable":  # nothing can be written: go, come back
                log.warning("the database stayed unavailable: this attempt stops; the run resumes from "
                            "its last checkpoint when the database is back", run_id=request.run_id)
                return RunOutcome(request.run_id, "running", {}, error_message=state.interrupt.reason,
                                  store_unavailable=True)
            # Expected after a pause past the lease: the task logs it once (INFO, "fenced out").
            log.debug("lease lost: another worker owns this run now", run_id=request.run_id)
            return RunOutcome(request.run_id, "running", {}, lease_lost=True)
        if status == "handed_over":  # no evidence: nothing failed; its records first, then go
            await self.context.drop(state)
            await state.journal.flush()
            return RunOutcome(request.run_id, "retrying", {}, handed_over=True)
        if context is not None:
            await self.context.save_identity(state)
            try:
                await self.evidence.save(context, state.browser.activity, state, failure if status == "failed" else None)
            finally:
                await self.context.close(state)
        await self.context.report_proxy(state, status, failure)
        tail: list[Entry] = []
        try:
            if status == "completed":  # a completed run ends: its last records go with that end
                tail = await state.journal.take_tail()
            else:  # its end may be a retry or a resume: every record is in the store first
                await state.journal.flush()
        except StepFailed as refused:  # STORE_WRITE_FAILED: the database refused a held-back record
            status, failure = "failed", refused
        outcome = self._outcome(state, status, failure)
        outcome.journal_tail = tail
        return outcome

    def _outcome(self, state: RunState, status: str, failure: StepFailed | None) -> RunOutcome:
        """The outcome the caller records: outputs and messages redacted; what was blocked logged."""
        request = state.request
        if state.browser.blocked is not None and state.browser.blocked.total:
            log.info("resources blocked", run_id=request.run_id, blocked=state.browser.blocked.summary())
        if state.browser.domains is not None and not state.browser.domains.empty:
            blocked = state.browser.domains.as_dict()
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
            error_step_path=state.failed.path,
            warnings=warnings,
        )

