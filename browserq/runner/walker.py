"""The step walk: steps in order (each under its ``when``), blocks, ``repeat`` with its stop
conditions, and resuming inside them. Each action step goes to :class:`StepAttempt`, each
``handoff`` to :class:`Handoff`; the walk decides only which step runs next, and how often.

A resumed run skips what its checkpoint already covers, re-entering a repeat at the pass the
checkpoint was taken in. A repeat that reaches ``max`` while its stop selector still says "more"
warns (a truncated result must not look complete).
"""

from __future__ import annotations

from typing import Any

import structlog

from browserq.actions import notices
from browserq.errors import Codes, StepFailed
from browserq.runner.attempt import StepAttempt
from browserq.runner.conditions import Conditions
from browserq.runner.handoff import Handoff
from browserq.runner.page import current_page, warn
from browserq.runner.state import RunState, StepOutcome
from browserq.runner.tabs import MAX_OPEN_PAGES
from browserq.templates import ActionStep, BlockStep, RepeatStep, render
from browserq.templates.handoff import HandoffStep

log = structlog.get_logger(__name__)


class StepWalker:
    """Control flow: which step runs next, and how often."""

    def __init__(self, attempt: StepAttempt, conditions: Conditions, handoff: Handoff) -> None:
        self.attempt = attempt
        self.conditions = conditions
        self.handoff = handoff

    async def run_steps(self, steps: list[Any], prefix: str, state: RunState) -> None:
        """Run ``steps`` (paths ``prefix0``, ``prefix1``, …), skipping what a resume covers."""
        resume_at = state.cursor.at_this_level() if state.cursor else None
        for index, step in enumerate(steps):
            path = f"{prefix}{index}"
            if resume_at is not None:  # resuming: skip what the checkpoint already covers
                target, resume_pass = resume_at
                if index < target:
                    continue
                resume_at = None
                await self._resume_into(step, path, state, resume_pass)
                continue
            resolution = state.request.resolution
            if resolution is not None and resolution.skips(path):
                await self.conditions.record_skip(step, path, state, resolution.why())
                continue
            try:
                await self._run_step(step, path, state)
            finally:
                self._note_closed_pages(path, state)

    def _note_closed_pages(self, path: str, state: RunState) -> None:
        """Pages the site opened beyond what a run keeps open were closed: the result says so."""
        tabs = state.browser.tabs
        closed = tabs.take_refused() if tabs is not None else 0
        if closed:
            warn(state, path, notices.PAGES_CLOSED, (
                f"the site opened {closed} page(s) beyond the {MAX_OPEN_PAGES} a run keeps open; "
                "they were closed at once"
            ))
            log.info("pages over the cap closed", run_id=state.request.run_id, step=path, closed=closed)

    async def _run_step(self, step: Any, path: str, state: RunState) -> None:
        """One step, repeat or block, unless its ``when`` does not hold (then it is skipped)."""
        if await self.conditions.skipped_by_when(step, path, state):
            return
        if isinstance(step, RepeatStep):
            await self._run_repeat(step, path, state)
        elif isinstance(step, BlockStep):
            await self.run_steps(step.steps, f"{path}.", state)
        elif isinstance(step, HandoffStep):
            await self.handoff.run_step(step, path, state)
        elif state.request.loaded.template.handoff is None:  # no trigger to check after it
            await self._run_action(step, path, state)
        else:
            page = current_page(state)
            url_before = None if page.is_closed() else page.url
            await self._run_action(step, path, state)
            await self.handoff.check_trigger(path, state, url_before)

    async def _run_action(self, step: ActionStep, path: str, state: RunState) -> None:
        """One action step, with its retries; a failure that ends the run leaves the walk."""
        result = await self.attempt.run(step, path, state)
        if result.outcome in (StepOutcome.FAILED, StepOutcome.NEEDS_REVIEW):
            assert result.failure is not None
            raise result.failure

    async def _resume_into(self, step: Any, path: str, state: RunState, resume_pass: int | None) -> None:
        """Re-enter the step the checkpoint was taken in (or inside): a repeat at its pass, a
        block at its child; its ``when`` held when it ran, so it is not judged again."""
        cursor = state.cursor
        assert cursor is not None
        if isinstance(step, RepeatStep) and resume_pass is not None:
            await self._run_repeat(step, path, state, resume_pass=resume_pass)
        elif isinstance(step, BlockStep) and cursor.depth + 1 < len(cursor.segments):
            cursor.descend()
            await self.run_steps(step.steps, f"{path}.", state)
        else:
            cursor.finish()  # the checkpointed step itself is done

    async def _run_repeat(
        self, step: RepeatStep, path: str, state: RunState, resume_pass: int | None = None
    ) -> None:
        """Run the body up to ``max`` times, stopping on the until_missing/while_present condition.

        ``resume_pass``: re-enter the loop at that pass (1-based), with the stop decision the
        checkpoint recorded for it, instead of starting over.
        """
        spec = step.repeat
        try:
            bound = int(render(spec.max, state.scope()))
        except (TypeError, ValueError) as exc:
            state.failed.path = path
            raise StepFailed(Codes.INVALID_STEP_INPUT, f"repeat.max is not a whole number: {exc}") from exc
        first = (resume_pass - 1) if resume_pass else 0
        for index in range(first, bound):
            if resume_pass is not None and index == first:
                last_pass = self._resumed_pass(state)
            else:
                if spec.while_present and not await self.conditions.present(spec.while_present, path, state):
                    break
                # until_missing is read at the start of a pass: the pass that begins without the
                # selector (the last page, without "next") still runs, and is the last one.
                last_pass = bool(spec.until_missing) and not await self.conditions.present(
                    spec.until_missing, path, state)
            state.loops.append({"index": index, "iteration": index + 1, "last_pass": last_pass})
            try:
                await self.run_steps(spec.steps, f"{path}[{index + 1}].", state)
            finally:
                state.loops.pop()
            if last_pass:
                break
        else:  # every pass up to max ran: did the stop condition still ask for more?
            await self._warn_if_cut_short(step, path, bound, state)

    @staticmethod
    def _resumed_pass(state: RunState) -> bool:
        """Re-enter the pass a checkpoint was taken in: its stop decision is the recorded one."""
        assert state.cursor is not None
        depth = len(state.loops)
        saved = state.cursor.loops[depth] if len(state.cursor.loops) > depth else {}
        state.cursor.descend()
        return bool(saved.get("last_pass", False))

    async def _warn_if_cut_short(self, step: RepeatStep, path: str, bound: int, state: RunState) -> None:
        """A repeat that reached ``max`` while its stop selector still said "more" is a truncated
        result, not a complete one: record a warning so it shows in the result and in ``show``.

        ``until_missing`` is read at the start of a pass, so reaching max means the last pass
        began with the selector present (another pass would have run). ``while_present`` is read
        once more: present now means another pass would have run."""
        spec = step.repeat
        if spec.until_missing is not None:
            condition, selector = "until_missing", spec.until_missing
        elif spec.while_present is not None and await self.conditions.present(spec.while_present, path, state):
            condition, selector = "while_present", spec.while_present
        else:
            return
        name = f"repeat {step.id!r}" if step.id else f"repeat at step {path}"
        message = (
            f"{name} stopped at max={bound} passes while its {condition} selector {selector!r} still "
            "matched: later pages or items were not processed (raise max if more were expected)"
        )
        warn(state, path, notices.REPEAT_MAX_REACHED, message)
        log.info("repeat cut short by max", run_id=state.request.run_id, step=path, max=bound)
