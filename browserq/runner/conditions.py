"""``when:`` at run time, and the page checks it shares with repeats and sessions.

A condition is judged once, just before its step (or repeat, or block) would start: ``present``
and ``absent`` ask the page (the same presence check ``optional`` and ``until_missing`` use) until
it agrees or ``within_ms`` ends, ``url`` matches the page's URL like ``wait: {url}``, ``if``
evaluates its expression over the params and the outputs so far. A step whose condition does not
hold is recorded as one ``skipped`` attempt whose output says why; a block or repeat skipped so
runs none of its steps. A condition is never judged again for a step a checkpoint or an unknown
side effect shows already ran: it held then, and the side effect may be why it would not now.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog
from pydantic import ValidationError

from browserq.actions import present, url_matcher
from browserq.errors import Codes, StepFailed
from browserq.guards import check_selector_length
from browserq.runner.page import current_page, step_inputs
from browserq.runner.parts import RunParts
from browserq.runner.record import Attempted, StepRecorder
from browserq.runner.state import RunState
from browserq.templates import ActionStep, RepeatStep, WhenSpec, render, selector_text
from browserq.templates.expression import parse_expression
from browserq.templates.expression_eval import EvaluationError, evaluate

log = structlog.get_logger(__name__)

#: How often ``present``/``absent`` ask the page again while ``within_ms`` lasts.
POLL_S = 0.1


class Conditions:
    """Judge ``when:``; record the steps it skips; answer "is this selector on the page?"."""

    def __init__(self, parts: RunParts, recorder: StepRecorder) -> None:
        self.parts = parts
        self.settings = parts.settings
        self.recorder = recorder

    async def skipped_by_when(self, step: Any, path: str, state: RunState) -> bool:
        """True when ``step`` has a condition that does not hold now (the skip is recorded)."""
        when: WhenSpec | None = getattr(step, "when", None)
        if when is None or _ran_before(path, state):
            return False
        try:
            reason = await self._unmet(when, path, state)
        except StepFailed:
            state.failed.path = path  # the run fails at this step (no attempt of it began)
            raise
        if reason is None:
            return False
        await self.record_skip(step, path, state, reason)
        return True

    async def _unmet(self, when: WhenSpec, path: str, state: RunState) -> str | None:
        """None when ``when`` holds; otherwise why the step is skipped."""
        kind = when.kind
        if kind == "if":
            assert when.if_ is not None
            try:
                holds = evaluate(parse_expression(when.if_), _expression_scope(state))
            except EvaluationError as exc:
                raise StepFailed(Codes.INVALID_STEP_INPUT, f"when: if {when.if_!r}: {exc}") from None
            return None if holds else f"when: if {when.if_!r} is false"
        rendered = _rendered(when, state)
        value = rendered.value_of(kind)
        if kind == "url":
            url = current_page(state).url
            if url_matcher(str(value))(url):
                return None
            return f"when: url {value!r} does not match the page's URL {url}"
        check_selector_length(selector_text(value), self.settings.max_selector_length)
        if await self._appears(value, kind == "present", rendered.within_ms, path, state):
            return None
        shown = selector_text(value)
        if kind == "present":
            return f"when: present {shown!r}: nothing matched within {rendered.within_ms} ms"
        return f"when: absent {shown!r}: still present after {rendered.within_ms} ms"

    async def _appears(self, selector: Any, wanted: bool, within_ms: int, path: str, state: RunState) -> bool:
        """Whether the page says ``wanted`` (present, or absent) about ``selector`` within
        ``within_ms`` (and the run's own deadline)."""
        deadline = min(time.monotonic() + within_ms / 1000, state.deadline)
        while True:
            if await self.present(selector, path, state) is wanted:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(POLL_S, remaining))

    async def record_skip(self, step: Any, path: str, state: RunState, reason: str) -> None:
        """One finished ``skipped`` attempt: ``output: {"skipped": reason}``, like an ``optional``
        step whose element is missing (which records no reason)."""
        page = state.browser.page
        url = page.url if page is not None and not page.is_closed() else None
        if isinstance(step, ActionStep):
            action, inputs = step.action, step_inputs(step)
        else:
            action = "repeat" if isinstance(step, RepeatStep) else "block"
            inputs = {"action": action, "when": step.when.model_dump(by_alias=True, exclude_defaults=True)}
        started = time.monotonic()
        record = await state.journal.step_started(
            path=path, step_id=step.id, attempt=1, action=action, inputs=inputs, url_before=url,
        )
        try:
            await state.journal.step_finished(record, status="skipped", url_after=url, output={"skipped": reason})
        except StepFailed:  # STORE_WRITE_FAILED: the database refused the record
            state.fail_at(record, path)
            raise
        self.recorder.finished(state, Attempted(path, step.id, action, 1, started), "skipped", None, url)
        log.debug("step skipped by when", run_id=state.request.run_id, step=path)

    async def present(self, selector: Any, path: str, state: RunState) -> bool:
        """Whether ``selector`` matches on the page now (a condition, a stop condition, a session
        check)."""
        page = current_page(state)
        timeout_s = state.request.loaded.template.settings.step_timeout_s
        try:
            async with asyncio.timeout(timeout_s):  # evaluate/count() have no timeout of their own
                return await present(page, selector)
        except TimeoutError as exc:
            state.failed.path = path
            await self.parts.unblock(state)
            raise StepFailed(
                Codes.TIMEOUT,
                f"the page did not answer whether {selector_text(selector)!r} is present within {timeout_s:g} s",
            ) from exc
        except Exception:
            state.failed.path = path
            raise  # translated where it leaves the run (TemplateRunner)


def _ran_before(path: str, state: RunState) -> bool:
    """Whether an earlier attempt started this step, or a step inside it, without finishing it
    (an unknown side effect): its condition held then."""
    return any(
        p == path or p.startswith((f"{path}.", f"{path}[")) for p in state.request.unknown_side_effects
    )


def _expression_scope(state: RunState) -> dict[str, Any]:
    """What an ``if`` expression reads: ``params.x``, ``outputs.y``, ``run.id``, ``loop.index``."""
    scope = state.scope()
    return {"params": state.request.params, "outputs": scope["outputs"], "run": scope["run"],
            "loop": scope.get("loop")}


def _rendered(when: WhenSpec, state: RunState) -> WhenSpec:
    """The condition with ``${...}`` in its selector or URL pattern filled in and re-checked."""
    data = when.model_dump(exclude_unset=True, exclude={"if_"})
    try:
        return WhenSpec.model_validate(render(data, state.scope()))
    except ValidationError as exc:
        details = "; ".join(err["msg"] for err in exc.errors(include_url=False))
        raise StepFailed(Codes.INVALID_STEP_INPUT, f"when is invalid after interpolation: {details}") from None
