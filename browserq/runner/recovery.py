"""Recovery: resuming from a checkpoint, settling a side effect whose outcome is unknown, and
logging in again when the session expired.

A run that resumes continues after its last checkpoint, in a fresh context with the storage the
checkpoint kept. A side effect that started but never reported is probed (its postcondition),
never re-run blindly. A step that failed the way a logged-out page fails runs the template's
login steps once, then the step again.
"""

from __future__ import annotations

import json
import time
from typing import Any

import structlog

from browserq.actions import locate, url_matcher
from browserq.browsers.errors import first_line
from browserq.errors import Codes, InfrastructureError, NeedsReview, StepFailed
from browserq.guards import check_url
from browserq.runner.base import RunnerBase, domain_failure
from browserq.runner.checkpoint import Checkpoint
from browserq.runner.state import RunState
from browserq.runner.storage import digest
from browserq.templates import ActionStep, render

log = structlog.get_logger(__name__)

#: Step failures that a logged-out session typically causes (the element or page is not there).
_SESSION_SYMPTOMS = frozenset({
    Codes.SELECTOR_NOT_FOUND, Codes.ASSERTION_FAILED, Codes.HTTP_4XX, Codes.BLOCKED,
    Codes.ELEMENT_NOT_ACTIONABLE, Codes.TIMEOUT,
})


class RecoveryMixin(RunnerBase):
    """Resume, probe, re-login: carrying on after something went wrong outside the step."""

    async def _restore(self, checkpoint: Checkpoint, state: RunState) -> None:
        """Open the checkpoint's page in the fresh context (storage already restored)."""
        page = self._page(state)
        path = f"{checkpoint.path}~resume"
        record = await state.journal.step_started(
            path=path,
            step_id=None,
            attempt=1,
            action="resume",
            inputs={"checkpoint": checkpoint.path, "url": checkpoint.url, "seq": checkpoint.seq},
            url_before=None,
        )
        failure = None
        started = time.monotonic()
        try:
            if checkpoint.url.startswith(("http://", "https://")):
                await page.goto(checkpoint.url, timeout=state.request.loaded.template.settings.step_timeout_s * 1000)
        except Exception as exc:
            failure = domain_failure(state) or self._failure(exc)
        await state.journal.step_finished(
            record,
            status="failed" if failure else "succeeded",
            url_after=page.url,
            output={"resumed_from": checkpoint.path},
            failure=failure,
        )
        self._notify(path, None, "resume", 1, "failed" if failure else "succeeded", started, failure,
                     state.redactor.text(page.url), state.redactor, state.request.run_id)
        if failure:
            state.fail_at(record, path)
            raise failure

    async def _logged_in_again(self, path: str, url_before: str, failure: StepFailed, state: RunState) -> bool:
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

    @staticmethod
    def _checkpoint_reason(step: ActionStep, url_before: str, url_after: str, tsettings: Any) -> str | None:
        """``"asked"``: an explicit ``checkpoint: true`` or a side effect (always taken);
        ``"auto"``: (``checkpoints: auto``) a step that landed on a new page; else None."""
        if step.checkpoint or step.side_effect:
            return "asked"
        if tsettings.checkpoints == "auto" and url_after != url_before and url_after.startswith("http"):
            return "auto"
        return None

    def _checkpoint_due(self, reason: str | None, state: RunState) -> bool:
        """At most one automatic checkpoint per BROWSERQ_CHECKPOINT_INTERVAL_MS since the run's
        start or its last checkpoint of any kind: a crash redoes at most that much read-only
        work (steps after a checkpoint are redone anyway; no side effect lies among them, each
        is followed by a checkpoint of its own). Asked-for checkpoints are always due."""
        if reason is None:
            return False
        if reason == "asked" or self.settings.checkpoint_interval_ms == 0:
            return True
        waited_ms = (time.monotonic() - state.last_checkpoint_at) * 1000
        return waited_ms >= self.settings.checkpoint_interval_ms

    async def _checkpoint(self, path: str, state: RunState, *, auto: bool = False) -> dict[str, Any] | None:
        """What a resumed run needs to continue after ``path`` (stored with the step's result).

        ``auto``: None when nothing a resume needs changed since the last checkpoint (same page,
        storage, outputs and warnings): resuming from that one redoes only read-only steps that
        found nothing new, so the write is skipped. An asked-for checkpoint is always written —
        its path is what marks a side effect as done."""
        browser = state.browser
        assert browser.context is not None and browser.page is not None and browser.storage is not None
        timeout_s = state.request.loaded.template.settings.step_timeout_s
        try:  # reading storage runs in the page: a busy page would hold the run here
            storage = await browser.storage.read_within(browser.page, timeout_s)
        except TimeoutError:
            await self._unblock(state)
            storage = await browser.storage.read_within(browser.page, timeout_s)
        outputs = json.loads(json.dumps(state.outputs, default=str))
        storage_digest = digest(storage)
        fingerprint = digest([browser.page.url, storage_digest, outputs, state.warnings])
        if auto and fingerprint == state.checkpoint_digest:
            return None
        if state.request.identity is not None and storage_digest != state.identity_storage_digest:
            await self._store_identity_storage(state, storage)  # only when it changed
            state.identity_storage_digest = storage_digest
        state.checkpoint_seq += 1
        state.checkpoint_digest, state.last_checkpoint_at = fingerprint, time.monotonic()
        checkpoint = Checkpoint(
            path=path,
            url=browser.page.url,
            outputs=outputs,
            loops=[dict(loop) for loop in state.loops],
            storage=storage,
            seq=state.checkpoint_seq,
            warnings=list(state.warnings),
            tab=_tab_of(state),
        )
        box = self.secret_box if self.secret_box.enabled or not state.redactor else self.checkpoint_box
        record = checkpoint.to_record(box, state.redactor)
        resolution = state.request.resolution
        if resolution is not None and resolution.pending_at(path):  # a crash before its start
            record["resolution"] = resolution.to_record()  # resumes with the same decision
        return record

    async def _settle_unknown_side_effect(
        self, step: ActionStep, path: str, state: RunState, attempt: int = 1
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
        record = await state.journal.step_started(
            path=path,
            step_id=step.id,
            attempt=attempt,
            action=step.action,
            inputs={"probe": "postcondition", "postcondition": condition},
            url_before=url_before,
            durable=True,  # the probe may be followed by the side effect once more
        )
        if held:
            checkpoint = await self._checkpoint(path, state)
            await self._record_end(
                state, record, step, attempt, started, path, "succeeded", None,
                {"recovered": True, "detail": detail}, checkpoint,
            )
            return True
        if step.on_unknown == "retry":
            await self._record_end(
                state, record, step, attempt, started, path, "failed",
                StepFailed(Codes.OUTCOME_UNKNOWN, f"outcome unknown ({detail}); on_unknown: retry"),
            )
            return False
        failure = NeedsReview(
            f"step {step.id or path} ({step.action}) changes the world and may or may not have "
            f"happened before its worker stopped: {detail}. Check it, then resolve the run: "
            f"`browserq resolve {state.request.run_id} --completed|--failed|--retry-from STEP`"
        )
        await self._record_end(state, record, step, attempt, started, path, "failed", failure)
        state.fail_at(record, path)
        raise failure

    async def _probe(self, step: ActionStep, state: RunState) -> tuple[bool, str]:
        """Check a side effect's postcondition. With a ``url`` the check happens in a second tab,
        so the run's own page (and what was filled in on it) stays as it was."""
        assert step.postcondition is not None and state.browser.context is not None
        condition = render(step.postcondition.model_dump(exclude_none=True), state.scope())
        timeout = min(5000.0, max(1000.0, (state.deadline - time.monotonic()) * 1000))
        probe_page = await state.browser.context.new_page() if condition.get("url") else self._page(state)
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
            if probe_page is not state.browser.page:
                await probe_page.close()
        return True, "postcondition holds"


def _tab_of(state: RunState) -> dict[str, int] | None:
    """Which page a checkpoint's URL is from, when the run has several (see Checkpoint.tab)."""
    tabs = state.browser.tabs
    if tabs is None or len(tabs.pages) < 2:
        return None
    index = tabs.index_of(tabs.current)
    return {"index": index if index is not None else -1, "open": len(tabs.pages)}
