"""Recovery: resuming from a checkpoint, settling a side effect whose outcome is unknown, and
logging in again when the session expired.

A run that resumes continues after its last checkpoint, in a fresh context with the storage the
checkpoint kept. A side effect that started but never reported is probed (its postcondition),
never re-run blindly. A step that failed the way a logged-out page fails runs the template's
login steps once, then the step again — through the walk it is handed (:class:`Walk`), the
same one the template's steps go through.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from browserq.actions import locate, url_matcher
from browserq.browsers.errors import first_line
from browserq.errors import Codes, InfrastructureError, NeedsReview, StepFailed
from browserq.guards import check_url
from browserq.runner.checkpoint import Checkpoint
from browserq.runner.checkpointer import Checkpointer
from browserq.runner.conditions import Conditions
from browserq.runner.page import current_page, domain_failure
from browserq.runner.parts import RunParts
from browserq.runner.record import Attempted, StepRecorder
from browserq.runner.state import RunState
from browserq.templates import ActionStep, render

log = structlog.get_logger(__name__)

#: Step failures that a logged-out session typically causes (the element or page is not there).
_SESSION_SYMPTOMS = frozenset({
    Codes.SELECTOR_NOT_FOUND, Codes.ASSERTION_FAILED, Codes.HTTP_4XX, Codes.BLOCKED,
    Codes.ELEMENT_NOT_ACTIONABLE, Codes.TIMEOUT,
})


#: Runs steps (paths ``prefix0``, ``prefix1``, …) the way the template's steps run.
Walk = Callable[[list[Any], str, RunState], Awaitable[None]]


class Recovery:
    """Resume, probe, re-login: carrying on after something went wrong outside the step."""

    def __init__(self, parts: RunParts, recorder: StepRecorder, checkpointer: Checkpointer,
                 conditions: Conditions, walk: Walk) -> None:
        self.parts = parts
        self.recorder = recorder
        self.checkpointer = checkpointer
        self.conditions = conditions
        self.walk = walk  # the template's login steps run through it

    async def restore(self, checkpoint: Checkpoint, state: RunState) -> None:
        """Open the checkpoint's page in the fresh context (storage already restored); when the
        run had several pages, every one of them at its URL, the run on the one it was on."""
        page = current_page(state)
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
        timeout_s = state.request.loaded.template.settings.step_timeout_s
        try:
            tabs = state.browser.tabs
            if checkpoint.pages and checkpoint.tab and tabs is not None:  # several pages: all of them again
                page = await tabs.reopen(checkpoint.pages, checkpoint.tab.get("index", -1), timeout_s) or page
            if checkpoint.url.startswith(("http://", "https://")):
                await page.goto(checkpoint.url, timeout=timeout_s * 1000)
        except Exception as exc:
            failure = domain_failure(state) or self.parts.failure(exc)
        await state.journal.step_finished(
            record,
            status="failed" if failure else "succeeded",
            url_after=page.url,
            output={"resumed_from": checkpoint.path},
            failure=failure,
        )
        self.recorder.finished(state, Attempted(path, None, "resume", 1, started),
                               "failed" if failure else "succeeded", failure, page.url)
        if failure:
            state.fail_at(record, path)
            raise failure

    async def logged_in_again(self, path: str, url_before: str, failure: StepFailed, state: RunState) -> bool:
        """When a step failed because the run is logged out (the session check matches nothing),
        run the template's login steps, go back to the step's page and let it try once more.
        A second time for the same step is ``SESSION_EXPIRED``."""
        session = state.request.loaded.template.session
        if session is None or isinstance(failure, InfrastructureError) or failure.code not in _SESSION_SYMPTOMS:
            return False
        if await self.conditions.present(session.check, path, state):
            return False  # logged in: the failure is the step's own
        if path in state.relogged:
            raise StepFailed(
                Codes.SESSION_EXPIRED,
                f"still logged out after running the login steps (session check {session.check!r} "
                f"matches nothing); the step failed with {failure.code.code}: {failure.message}",
            )
        state.relogged.add(path)
        log.info("session check failed; logging in again", run_id=state.request.run_id, step=path)
        await self.walk(session.login, f"{path}~login.", state)
        if not await self.conditions.present(session.check, path, state):
            raise StepFailed(
                Codes.SESSION_EXPIRED,
                f"the login steps ran but the session check {session.check!r} still matches nothing",
            )
        # Back to the page the run meant to be on (a logged-out site may have redirected it).
        target = state.last_navigation or url_before
        if target.startswith(("http://", "https://")):
            await current_page(state).goto(target)
        return True

    async def settle_unknown_side_effect(
        self, step: ActionStep, path: str, state: RunState, attempt: int = 1
    ) -> bool:
        """A side effect that started but never reported: probe, never re-run blindly.

        Returns True when its postcondition shows it happened (recorded as recovered); False when
        the template says it is safe to repeat (``on_unknown: retry``); otherwise the run goes to
        ``needs_review``.
        """
        page = current_page(state)
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
        attempted = Attempted(path, step.id, step.action, attempt, started)
        if held:
            checkpoint = await self.checkpointer.take(path, state)
            await self.recorder.end(state, record, attempted, "succeeded", None,
                                    {"recovered": True, "detail": detail}, checkpoint)
            return True
        if step.on_unknown == "retry":
            await self.recorder.end(state, record, attempted, "failed", StepFailed(
                Codes.OUTCOME_UNKNOWN, f"outcome unknown ({detail}); on_unknown: retry"))
            return False
        failure = NeedsReview(
            f"step {step.id or path} ({step.action}) changes the world and may or may not have "
            f"happened before its worker stopped: {detail}. Check it, then resolve the run: "
            f"`browserq resolve {state.request.run_id} --completed|--failed|--retry-from STEP`"
        )
        await self.recorder.end(state, record, attempted, "failed", failure)
        state.fail_at(record, path)
        raise failure

    async def _probe(self, step: ActionStep, state: RunState) -> tuple[bool, str]:
        """Check a side effect's postcondition. With a ``url`` the check happens in a second tab,
        so the run's own page (and what was filled in on it) stays as it was."""
        assert step.postcondition is not None and state.browser.context is not None
        condition = render(step.postcondition.model_dump(exclude_none=True), state.scope())
        timeout = min(5000.0, max(1000.0, (state.deadline - time.monotonic()) * 1000))
        probe_page = await state.browser.context.new_page() if condition.get("url") else current_page(state)
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

