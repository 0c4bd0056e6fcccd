"""Waiting for a person: the ``handoff`` step, the template's ``handoff:`` trigger, the wait.

A wait keeps everything the run has: its context and page, its lease (the heartbeat goes on
renewing it, and still delivers a cancel), its worker slot. The worker serves the page in a live
view (:mod:`browserq.live`); the person's inputs are recorded as step attempts under the
handoff's path (``3~input``, one attempt per input, never a password field's keys). The wait
ends when ``until`` holds (checked every :data:`POLL_S`), when the person presses Continue
(the run goes on) or Give up (``HUMAN_GAVE_UP``), or at its ``timeout_s`` (``HUMAN_TIMEOUT``,
with the usual failure snapshot). Time waited is given back to the run: its ``timeout_s``
counts only the automation's own time. A worker that is stopping ends a wait as a *handover*
(:mod:`browserq.runner.drain`): the person's link stops working, the run is re-enqueued from its
last checkpoint and waits again on another worker, which issues a new link.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import structlog

from browserq.actions import url_matcher
from browserq.errors import Codes, StepFailed
from browserq.journal import StepRecord
from browserq.run_events import HandoffEnded, RunWaiting
from browserq.runner.checkpointer import Checkpointer
from browserq.runner.conditions import Conditions
from browserq.runner.live_view import LiveViews
from browserq.runner.page import current_page
from browserq.runner.parts import RunParts
from browserq.runner.record import Attempted, StepRecorder
from browserq.runner.state import RunState
from browserq.templates import render, render_step
from browserq.templates.handoff import HandoffStep, HandoffTrigger, UntilSpec, until_text

log = structlog.get_logger(__name__)

#: How often the wait asks the page whether ``until`` holds.
POLL_S = 0.25
#: The longest one live-view input may take to apply (a page that hangs must not hang the wait).
INPUT_TIMEOUT_S = 5.0


class Handoff:
    """The wait for a person, and the trigger that starts one after a navigation."""

    def __init__(self, parts: RunParts, recorder: StepRecorder, checkpointer: Checkpointer,
                 conditions: Conditions, live: LiveViews) -> None:
        self.parts = parts
        self.settings = parts.settings
        self.recorder = recorder
        self.checkpointer = checkpointer
        self.conditions = conditions
        self.live = live

    # --- the template's trigger ----------------------------------------------------------------
    async def check_trigger(self, path: str, state: RunState, url_before: str | None) -> None:
        """After a step that navigated: wait for a person if the page shows ``when_present``."""
        trigger: HandoffTrigger | None = state.request.loaded.template.handoff
        if trigger is None or "~" in path:
            return
        page = current_page(state)
        if page.is_closed() or (page.url == url_before and not _navigated(state, page)):
            return
        if not await self.conditions.present(trigger.when_present, path, state):
            return
        state.human.trigger_waits += 1
        if state.human.trigger_waits > trigger.max_times:
            state.failed.path = path
            raise StepFailed(
                Codes.HUMAN_TIMEOUT,
                f"the page shows the handoff trigger {_shown(trigger.when_present)} again, "
                f"after {trigger.max_times} handoffs (handoff.max_times)",
            )
        message = str(render(trigger.message, state.scope()))
        await self._handoff(f"{path}~handoff", None, "trigger", message, trigger.done_when,
                            trigger.timeout_s, state)

    # --- the explicit step -------------------------------------------------------------------------
    async def run_step(self, step: HandoffStep, path: str, state: RunState) -> None:
        """The explicit ``handoff`` step: one wait for a person, as the template words it."""
        rendered = render_step(step, state.scope())
        assert isinstance(rendered, HandoffStep)
        await self._handoff(path, step.id, "step", rendered.message, rendered.until,
                            rendered.timeout_s, state)

    # --- a session's command ---------------------------------------------------------------------
    async def ask(self, step: HandoffStep, path: str, state: RunState, *, budget_s: float) -> dict[str, Any]:
        """A session's ``handoff`` command: the same wait as the step, bounded by ``budget_s`` (what
        is left of the session's lifetime) instead of the template's handoff budget; the run goes
        back to ``running`` however the wait ends (a session goes on after a failed command).
        Returns what the person did (``outcome``, ``waited_s``, ``inputs``); raises the step's
        ``HUMAN_TIMEOUT`` / ``HUMAN_GAVE_UP``."""
        rendered = render_step(step, state.scope())
        assert isinstance(rendered, HandoffStep)
        return await self._handoff(path, step.id, "step", rendered.message, rendered.until,
                                   rendered.timeout_s, state, budget_s=budget_s, goes_on=True)

    # --- the wait --------------------------------------------------------------------------------
    async def _handoff(
        self, path: str, step_id: str | None, kind: str, message: str, until: UntilSpec | None,
        timeout_s: float, state: RunState, *, budget_s: float | None = None, goes_on: bool = False,
    ) -> dict[str, Any]:
        """One wait for a person, recorded as one attempt of the step at ``path``; what the person
        did. ``budget_s``: the time left for waits (default: the template's handoff budget)."""
        started = time.monotonic()
        page = current_page(state)
        shown = until_text(until, state.redactor)  # rendered: it may hold a secret
        inputs = {"action": "handoff", "message": message, "until": shown, "timeout_s": timeout_s}
        record = await state.journal.step_started(
            path=path, step_id=step_id, attempt=1, action="handoff", inputs=inputs, url_before=page.url,
        )
        attempted = Attempted(path, step_id, "handoff", 1, started)
        self.recorder.started(state, attempted, page.url)
        if budget_s is None:
            budget_s = state.request.loaded.template.human_wait_s - state.human.waited_s
        wait_s = min(timeout_s, max(0.0, budget_s))
        outcome, waited, failure = "budget", 0.0, None
        try:
            if wait_s > 0:
                outcome, waited = await self._wait(path, kind, message, until, wait_s, state, goes_on)
        except asyncio.CancelledError:  # a cancel, the lease lost, a time limit: still recorded
            await self._record_cut_short(state, record, attempted)
            raise
        finally:
            state.human.waited_s += waited
            self._give_time_back(state, waited)
        if outcome == "budget":
            failure = StepFailed(Codes.HUMAN_TIMEOUT, "no time is left for a handoff: the run's handoff budget "
                                 f"({state.request.loaded.template.human_wait_s:g} s in all) or the session's "
                                 "lifetime is used up")
        elif outcome == "timeout":
            failure = StepFailed(Codes.HUMAN_TIMEOUT, f"nobody finished the handoff within {wait_s:g} s: {message}")
        elif outcome == "gave_up":
            failure = StepFailed(Codes.HUMAN_GAVE_UP, f"a person gave up the handoff: {message}")
        output = {"outcome": outcome, "waited_s": round(waited, 1), "inputs": state.human.inputs}
        if failure is not None:
            await self.recorder.end(state, record, attempted, "failed", failure, output)
            state.fail_at(record, path)
            raise failure
        checkpoint = None
        if "~" not in path:  # what the person did (a solved captcha's cookies) is kept
            checkpoint = await self.checkpointer.take(path, state, auto=False)
        await self.recorder.end(state, record, attempted, "succeeded", None, output, checkpoint)
        return output

    async def _record_cut_short(self, state: RunState, record: StepRecord, attempted: Attempted) -> None:
        """The wait was interrupted: its attempt says so (unless another worker owns the run)."""
        state.fail_at(record, attempted.path)
        if state.interrupt.kind in ("lease_lost", "store_unavailable"):
            return
        why = _CUT_SHORT.get(state.interrupt.kind or "", "interrupted by the run's time limit")
        code = Codes.WORKER_LOST if state.interrupt.kind == "handover" else Codes.CANCELLED
        try:
            await self.recorder.end(state, record, attempted, "failed", StepFailed(code, f"the handoff was {why}"))
        except Exception as exc:  # being interrupted; the run's record says why
            log.debug("could not record the interrupted handoff", error=str(exc))

    async def _wait(
        self, path: str, kind: str, message: str, until: UntilSpec | None, wait_s: float,
        state: RunState, goes_on: bool = False,
    ) -> tuple[str, float]:
        """Enter waiting_for_human, serve the live view, wait; returns (outcome, seconds waited).
        ``goes_on``: back to ``running`` however it ends (a session's wait)."""
        from browserq.live.session import LiveSession  # the live view loads only when needed

        request = state.request
        shown = until_text(until, state.redactor)  # scrubbed: the store, webhook, meta, page show it
        self._hold_run_clock(state, wait_s)
        await state.journal.flush()  # every record before the status change, in order
        server = await self.live.server()
        records = state.journal.handoffs
        handoff = await records.begin(
            step_path=path, kind=kind, message=state.redactor.text(message), until=shown, timeout_s=wait_s,
            live_base_url=server.base_url if server is not None else None,
        )
        begun = time.monotonic()
        ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        state.human.inputs = 0

        def end(outcome: str) -> None:
            if not ended.done():
                ended.set_result(outcome)

        session = LiveSession(
            run_id=request.run_id, handoff_id=handoff.id, message=handoff.message,  # redacted
            until=shown, deadline=handoff.deadline_at,
            page=lambda: current_page(state),
            redeem=lambda token: records.redeem_link(token, handoff_id=handoff.id),
            on_input=lambda event: self._record_input(path, event, state),
            on_continue=lambda: end("continued"), on_give_up=lambda: end("gave_up"),
        )
        if server is not None:
            server.register(session)
        reason = "interrupted"
        try:
            link = await records.mint_link(
                purpose="worker", ttl_s=self.settings.live_token_ttl_s,
            ) if server is not None else None
            self.parts.observers.run_waiting(RunWaiting(
                request.run_id, path, state.redactor.text(message), shown,
                handoff.deadline_at.isoformat(), link, request.loaded.template.name,
            ))
            state.human.waiting = True
            reason = await self._person_works(session, ended, until, path, wait_s, state)
        finally:
            state.human.waiting = False
            waited = time.monotonic() - begun
            if state.interrupt.kind == "handover":
                reason = "handed_over"
            if server is not None:
                await server.unregister(handoff.id, _ENDED.get(reason, "the handoff ended"),
                                        follow=reason == "handed_over")  # the page follows the run
            self.parts.observers.handoff_ended(HandoffEnded(request.run_id, path, reason, waited,
                                                                 request.loaded.template.name))
            if reason == "handed_over":
                await self._end_handed_over(handoff.id, state)
            elif goes_on and reason == "interrupted" and state.interrupt.kind == "cancel":
                await self._end_cut_short(handoff.id, state)
        resume = reason in ("condition", "continued")
        then = "; running again" if resume else "; the session goes on" if goes_on else ""
        await records.end(
            handoff.id, outcome=reason, inputs=state.human.inputs, resume=resume or goes_on,
            reason=f"handoff ended: {_ENDED[reason]}{then}",
        )
        return reason, waited

    async def _person_works(
        self, session: Any, ended: asyncio.Future[str], until: UntilSpec | None, path: str,
        wait_s: float, state: RunState,
    ) -> str:
        """The wait, left out of the trace (a person's keys, and the page's fields after each, would
        be in its snapshots); what they typed is learned at its end, to be scrubbed from the trace
        recorded later (and, typed in a password field, from everything)."""
        from browserq.live.typed import field_values, learn

        before = await field_values(state.browser.page)
        trace = state.browser.trace
        try:
            async with trace.paused() if trace is not None else contextlib.nullcontext():
                return await self._until_done(ended, until, path, wait_s, state)
        finally:
            after = await field_values(state.browser.page) if session.typing.typed else []
            learn(session.typing, before, after, state.human.typed, state.redactor)

    async def _end_handed_over(self, handoff_id: int, state: RunState) -> None:
        """The wait's row says it was handed over (the run stays waiting until the handover's
        transition); a failure here leaves that to the transition (outcome ``interrupted``)."""
        request = state.request
        try:
            await state.journal.handoffs.end(
                handoff_id, outcome="handed_over", inputs=state.human.inputs, resume=False,
                reason=f"handoff ended: {_ENDED['handed_over']}",
            )
        except Exception as exc:
            log.warning("could not record the handover of the wait", run_id=request.run_id, error=str(exc)[:200])

    async def _end_cut_short(self, handoff_id: int, state: RunState) -> None:
        """A session's wait cut short (closed, its lifetime out, cancelled): the run goes back to
        ``running``, from which the session's end is recorded next."""
        try:
            await state.journal.handoffs.end(handoff_id, outcome="cancelled", inputs=state.human.inputs, resume=True,
                                             reason=f"handoff ended: {state.interrupt.reason}")
        except Exception as exc:  # the session's end is recorded anyway (the transition closes the row)
            log.warning("could not record the end of the cut-short wait", run_id=state.request.run_id,
                        error=str(exc)[:200])

    async def _until_done(
        self, ended: asyncio.Future[str], until: UntilSpec | None, path: str, wait_s: float,
        state: RunState,
    ) -> str:
        """Poll ``until`` and wait for the person's button, up to ``wait_s``."""
        deadline = time.monotonic() + wait_s
        while True:
            if until is not None and await self._until_holds(until, path, state):
                return "condition"
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            try:
                return await asyncio.wait_for(asyncio.shield(ended), timeout=min(POLL_S, left))
            except TimeoutError:
                continue

    async def _until_holds(self, until: UntilSpec, path: str, state: RunState) -> bool:
        page = current_page(state)
        if page.is_closed():
            return False
        if until.url is not None:
            return url_matcher(until.url)(page.url)
        try:
            if until.present is not None:
                return await self.conditions.present(until.present, path, state)
            assert until.absent is not None
            return not await self.conditions.present(until.absent, path, state)
        except StepFailed:  # the page is busy (a person is working in it): ask again soon
            return False

    async def _record_input(self, path: str, event: Any, state: RunState) -> None:
        """One forwarded input, as a finished step attempt (``3~input``, attempt = its number)."""
        state.human.inputs += 1
        fields = {name: value for name, value in vars(event).items() if value is not None and value is not False}
        fields.pop("kind", None)
        page = current_page(state)
        record = await state.journal.step_started(
            path=f"{path}~input", step_id=None, attempt=state.human.inputs,
            action=f"human_{event.kind}"[:20], inputs=fields, url_before=page.url,
        )
        await state.journal.step_finished(record, status="succeeded", url_after=page.url)

    # --- the run's clock ---------------------------------------------------------------------------
    @staticmethod
    def _hold_run_clock(state: RunState, wait_s: float) -> None:
        """The run's timeout_s must not fire while a person works: push it past the wait."""
        timer = state.human.run_timer
        if timer is not None and timer.when() is not None:
            timer.reschedule(timer.when() + wait_s)

    @staticmethod
    def _give_time_back(state: RunState, waited: float) -> None:
        """The wait is over: the run's deadline is what it was plus the time waited."""
        timer = state.human.run_timer
        state.deadline = state.human.base_deadline + state.human.waited_s
        if timer is not None and timer.when() is not None:
            loop_now = asyncio.get_running_loop().time()
            timer.reschedule(loop_now + max(0.0, state.deadline - time.monotonic()))
        gate = state.browser.gate
        if gate is not None:
            gate.deadline = state.deadline


_ENDED = {
    "condition": "its condition holds",
    "continued": "a person pressed Continue",
    "gave_up": "a person gave up",
    "timeout": "nobody finished it in time",
    "interrupted": "the run was interrupted",
    "handed_over": "this worker is stopping: the run waits again on another worker, with a new link",
}
#: Why a wait's attempt was cut short, by the interrupt's kind (else the run's time limit).
_CUT_SHORT = {
    "cancel": "cancelled",
    "handover": "handed over to another worker (this one is stopping)",
}


def _shown(selector: Any) -> str:
    from browserq.templates import selector_text

    return repr(selector_text(selector))


def _navigated(state: RunState, page: Any) -> bool:
    """Whether the page loaded a document since the last check (a same-URL reload or a POST)."""
    counter = state.human.navigations
    key = id(page)
    if key not in counter.pages:
        counter.watch(page)
        return True  # a new page (a tab): check it
    return counter.take(key)


__all__ = ["Handoff"]
