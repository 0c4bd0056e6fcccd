"""Executing one run attempt of a template: setup → steps → finish, top to bottom.

:class:`TemplateRunner` opens a fresh context for the run (identity, proxy, limits, trace,
allowed_domains guard, watchdog), runs the steps within the run's ``timeout_s`` while a heartbeat
renews the lease, and finishes: evidence, identity storage, proxy health, the outcome. Each part
lives in its own module — the step loop (:mod:`.steps`), one step with its retries
(:mod:`.attempt`), recovery (:mod:`.recovery`), evidence (:mod:`.evidence`), the session
(:mod:`.session`) — and everything persistent goes through the run's journal
(:class:`browserq.journal.RunJournal`). Only an :class:`InfrastructureError` (the browser itself
is gone) leaves the pool to relaunch Chromium, and even then only this run is affected.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

from browserq import stealth
from browserq.actions.outputs import OutputBudget
from browserq.browsers.errors import first_line
from browserq.browsers.pool import BrowserPool
from browserq.errors import Codes, NeedsReview, StepFailed, StoreError
from browserq.journal import ArtifactStore, LeaseLost, RunJournal, Store, StoreUnavailable
from browserq.journal.batch import Entry
from browserq.journal.budget import budgeted
from browserq.limits import RateLimiter
from browserq.proxies import ProxyManager
from browserq.recordable import clean_text
from browserq.redact import Redactor
from browserq.redact import active as active_redactor
from browserq.runner import drain
from browserq.runner.attempt import AttemptMixin
from browserq.runner.base import raise_if_blocked
from browserq.runner.capture import PageActivity
from browserq.runner.checkpoint import ResumeCursor
from browserq.runner.dialogs import DialogAnswerer
from browserq.runner.events import ListenerObserver, Observers
from browserq.runner.evidence import EvidenceMixin
from browserq.runner.recovery import RecoveryMixin
from browserq.runner.session import SessionMixin
from browserq.runner.state import RunOutcome, RunRequest, RunState, StepListener
from browserq.runner.steps import StepsMixin
from browserq.runner.storage import StorageReader, digest
from browserq.runner.tabs import Tabs
from browserq.runner.trace import open_trace
from browserq.runner.watchdog import PageWatchdog
from browserq.secrets import SecretBox
from browserq.settings import Settings

log = structlog.get_logger(__name__)

#: The longest a running run takes to notice it was cancelled (the heartbeat reads the flag).
CANCEL_POLL_S = 2.0


class TemplateRunner(StepsMixin, AttemptMixin, RecoveryMixin, EvidenceMixin, SessionMixin):
    """Runs template runs on a browser pool; records them through one journal per attempt."""

    def __init__(
        self,
        pool: BrowserPool,
        store: Store,
        artifacts: ArtifactStore,
        settings: Settings,
        listener: StepListener | None = None,
        secret_box: SecretBox | None = None,
        rate_limiter: RateLimiter | None = None,
        proxies: ProxyManager | None = None,
        checkpoint_box: SecretBox | None = None,
        observers: Observers | None = None,
    ) -> None:
        self.pool = pool
        self.store = store  # handed to each run's journal only
        self.artifacts = artifacts
        self.settings = settings
        self.observers = observers if observers is not None else Observers()
        if listener is not None:
            self.observers.add(ListenerObserver(listener))
        self.secret_box = secret_box or SecretBox(settings.secret_key)
        # Without BROWSERQ_SECRET_KEY, checkpoints of runs with secrets are encrypted with a key
        # that exists only in this process (see Checkpoint.to_record): never stored in clear.
        self.checkpoint_box = checkpoint_box or (
            self.secret_box if self.secret_box.enabled else SecretBox.for_this_process()
        )
        self.rate_limiter = rate_limiter
        self.proxies = proxies if proxies is not None and proxies.enabled else None

    async def run(self, request: RunRequest) -> RunOutcome:
        """Execute (or resume) a run and return its outcome; the caller records the final status.

        While it runs, its redactor scrubs every log line of this process (Celery's included)."""
        redactor = Redactor({name: request.params.get(name) for name in request.secret_names})
        with active_redactor(redactor):
            return await self._run(request, redactor)

    async def _run(self, request: RunRequest, redactor: Redactor) -> RunOutcome:
        """Heartbeat on, the attempt, heartbeat off, then the finish."""
        state = self._new_state(request, redactor)
        main = asyncio.current_task()
        assert main is not None
        heartbeat = (
            asyncio.create_task(self._heartbeat(state, main)) if request.token is not None else None
        )
        try:
            failure, status = await self._attempt(state, main)
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
        return await self._finish(state, status, failure)

    def _new_state(self, request: RunRequest, redactor: Redactor) -> RunState:
        """The attempt's memory and journal; a resumed run starts from its checkpoint's."""
        journal = RunJournal(
            self.store,
            budgeted(self.store, self.artifacts, request.run_id, self.settings.max_run_artifact_bytes),
            run_id=request.run_id,
            run_attempt=request.run_attempt,
            token=request.token,
            redactor=redactor,
            identity=request.identity,
            flush_ms=self.settings.journal_flush_ms,
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
        """Set up and run the steps; return ``(failure, status)`` — whatever ended the run."""
        try:
            await self._open(state)
            return await self._steps_in_time(state)
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
        failure = self._failure(exc)
        if failure.code is Codes.INTERNAL and not isinstance(exc, StoreUnavailable):
            log.exception("unexpected error in run", run_id=state.request.run_id)
        return failure

    async def _open(self, state: RunState) -> None:
        """A fresh context for the run: storage, proxy, limits, trace, the page and its guards."""
        tsettings = state.request.loaded.template.settings
        browser = state.browser
        context = await self.pool.new_context(**await self._context_options(state))
        browser.context = context
        browser.activity = PageActivity(
            context,
            console_lines=self.settings.snapshot_console_lines,
            network_entries=self.settings.snapshot_network_entries,
        )
        context.set_default_timeout(tsettings.step_timeout_s * 1000)
        request = state.request
        browser.storage = StorageReader(context, request.resume.storage if request.resume else request.identity_storage)
        await self._install_limits(context, state)
        self._watch_downloads(context, state)  # every download, measured while it arrives
        browser.trace = await open_trace(
            context, state.journal.artifact_base, tsettings.trace, retried_run=state.request.run_attempt > 1
        )
        # Before any page loads: every dialog of every page is answered (and recorded).
        browser.dialogs = DialogAnswerer(context, tsettings.dialogs, state.redactor, human=tsettings.human_input)
        page = context.pages[0] if context.pages else await stealth.new_page(context)
        browser.tabs = Tabs(context, browser)  # follows popups; moves page and watchdog
        browser.tabs.adopt(page, PageWatchdog(context, page))
        await self._bound_documents(context, page, state)  # under patchright (document_bodies)
        # Before the first request of the run (resume and steps): a foreign document never leaves.
        browser.domains = await self.pool.domain_guard(context).protect(
            context, page, tsettings.allowed_domains, strict=tsettings.network == "strict"
        )
        assert browser.watchdog is not None
        await browser.watchdog.attach()

    async def _steps_in_time(self, state: RunState) -> tuple[StepFailed | None, str]:
        """Resume (when asked) and run every step, all within the run's ``timeout_s``."""
        request = state.request
        tsettings = request.loaded.template.settings
        try:
            async with asyncio.timeout(tsettings.timeout_s) as timer:
                # A wait for a person holds this clock and gives the time waited back.
                state.human.run_timer, state.human.base_deadline = timer, state.deadline
                async with self._watched(state):  # the live view of a running run, when enabled
                    if request.resume is not None:
                        await self._restore(request.resume, state)
                        # a wait the page asks for (handed over, or its worker lost) comes again
                        await self._check_trigger(request.resume.path, state, None)
                    await self._run_steps(request.loaded.template.steps, "", state)
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
            if state.browser.trace is not None:
                state.browser.trace.discard()
            if context is not None:
                await self.pool.close_context(context)
            if state.interrupt.kind == "store_unavailable":  # nothing can be written: go, come back
                log.warning("the database stayed unavailable: this attempt stops; the run resumes from "
                            "its last checkpoint when the database is back", run_id=request.run_id)
                return RunOutcome(request.run_id, "running", {}, error_message=state.interrupt.reason,
                                  store_unavailable=True)
            # Expected after a pause past the lease: the task logs it once (INFO, "fenced out").
            log.debug("lease lost: another worker owns this run now", run_id=request.run_id)
            return RunOutcome(request.run_id, "running", {}, lease_lost=True)
        if status == "handed_over":  # no evidence: nothing failed; its records first, then go
            if state.browser.trace is not None:
                state.browser.trace.discard()
            if context is not None:
                await self.pool.close_context(context)
            await state.journal.flush()
            return RunOutcome(request.run_id, "retrying", {}, handed_over=True)
        if context is not None:
            await self._save_identity(state)
            await self._finish_context(context, state.browser.activity, state, failure if status == "failed" else None)
        await self._report_proxy(state, status, failure)
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

    async def _heartbeat(self, state: RunState, main: asyncio.Task[Any]) -> None:
        """Renew the lease while the run progresses; stop the run if it was lost or cancelled."""
        request = state.request
        # Every third of the lease, and at least every CANCEL_POLL_S so a cancel lands quickly.
        interval = max(0.5, min(request.lease_ttl_s / 3, CANCEL_POLL_S))
        while True:
            await asyncio.sleep(interval)
            try:
                cancel_reason = await state.journal.renew_lease(request.lease_ttl_s)
            except LeaseLost:
                state.interrupt.kind = "lease_lost"
                main.cancel()
                return
            except StoreUnavailable as exc:  # away for the whole retry window: the attempt stops
                state.interrupt.kind, state.interrupt.reason = "store_unavailable", str(exc)
                main.cancel()
                return
            except StoreError as exc:  # the database refused the renewal: try again next time
                log.warning("lease renewal failed", run_id=request.run_id, error=str(exc))
                continue
            if cancel_reason is not None:
                state.interrupt.kind, state.interrupt.reason = "cancel", cancel_reason
                main.cancel()
                return
            if state.human.waiting and drain.requested():  # this worker is stopping: go elsewhere
                state.interrupt.kind = "handover"
                main.cancel()
                return

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

