"""Acting like a visitor: click, fill, type, select, check, press, hover."""

from __future__ import annotations

import random
from typing import Any

from browserq import stealth
from browserq.actions.context import StepContext
from browserq.actions.locate import first, settle
from browserq.errors import Codes, StepFailed
from browserq.templates import (
    CheckStep,
    ClickStep,
    FillStep,
    HoverStep,
    PressStep,
    SelectStep,
    TypeStep,
    UncheckStep,
)
from browserq.templates.interpolate import rendered_number


async def click(ctx: StepContext, step: ClickStep) -> Any:
    """Click the first match (like a person, with ``human_input``), then let a navigation settle."""
    locator = first(ctx, step.selector)
    click_count = rendered_number(step.click_count, "click_count")
    if ctx.settings.human_input and step.button == "left" and click_count == 1:
        await locator.wait_for(state="visible", timeout=ctx.timeout_ms)
        await stealth.move_and_click(ctx.page, locator, random.Random())
    else:
        await locator.click(button=step.button, click_count=click_count, timeout=ctx.timeout_ms)
    await settle(ctx.page, ctx.timeout_ms)


async def fill(ctx: StepContext, step: FillStep) -> Any:
    """Replace the field's value (fill clears first) and check that the page kept it.

    The read-back is the one round trip kept on purpose: Playwright's fill waits for the field
    and inserts the text as trusted input, but the page's own input handlers (masks, case
    changes, ``maxlength``) run after it and may rewrite the value; nothing in fill reports that.
    """
    locator = first(ctx, step.selector)
    await locator.fill(step.value, timeout=ctx.timeout_ms)
    actual = await locator.input_value(timeout=ctx.timeout_ms)
    if actual != step.value:
        # A secret's rewritten form (upper-cased, cut short) is still the secret: never shown.
        shown = "a value" if ctx.redactor.contains(step.value) else repr(ctx.redactor.text(actual))
        raise StepFailed(Codes.VALUE_MISMATCH, f"{step.selector} holds {shown} after fill, not the value given")


#: Puts the caret after the field's content. Playwright's own typing focuses an ``<input>`` with
#: the caret at the start, so ``pre-`` + ``abc`` became ``abcpre-``. False: the field has no
#: selection API (``type=email``/``number``), where the End key does the same.
_CARET_TO_END_JS = """
(el) => {
  if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) {
    try { const n = el.value.length; el.setSelectionRange(n, n); return true; } catch (e) { return false; }
  }
  if (el.isContentEditable) {
    const range = el.ownerDocument.createRange();
    range.selectNodeContents(el);
    range.collapse(false);
    const selection = el.ownerDocument.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  return true;
}
"""


async def type_text(ctx: StepContext, step: TypeStep) -> Any:
    """Type keystrokes after what the field already holds (``fill`` is the one that replaces)."""
    locator = first(ctx, step.selector)
    await locator.focus(timeout=ctx.timeout_ms)
    if not await locator.evaluate(_CARET_TO_END_JS, timeout=ctx.timeout_ms):
        await ctx.page.keyboard.press("End")
    if ctx.settings.human_input:
        if ctx.redactor.contains(step.text):
            # One trace action (and DOM snapshots) per key would spell the secret: not recorded.
            async with ctx.untraced():
                await stealth.type_like_human(locator, step.text, random.Random())
        else:
            await stealth.type_like_human(locator, step.text, random.Random())
        return
    # The keyboard types into the focused element without refocusing it (which would move the
    # caret back to the start).
    await ctx.page.keyboard.type(step.text, delay=rendered_number(step.delay_ms, "delay_ms"))


async def select(ctx: StepContext, step: SelectStep) -> Any:
    """Choose options by value or label; the output is the values now selected."""
    values = [step.value] if isinstance(step.value, str) else list(step.value)
    locator = first(ctx, step.selector)
    if step.by == "label":
        selected = await locator.select_option(label=values, timeout=ctx.timeout_ms)
    else:
        selected = await locator.select_option(value=values, timeout=ctx.timeout_ms)
    return selected  # the option values now selected (what ``into:`` stores)


async def check(ctx: StepContext, step: CheckStep) -> Any:
    """Tick the checkbox (or radio) matched."""
    await first(ctx, step.selector).check(timeout=ctx.timeout_ms)


async def uncheck(ctx: StepContext, step: UncheckStep) -> Any:
    """Clear the checkbox matched."""
    await first(ctx, step.selector).uncheck(timeout=ctx.timeout_ms)


async def press(ctx: StepContext, step: PressStep) -> Any:
    """Press a key on the element, or on the page; then let a navigation settle."""
    if step.selector:
        await first(ctx, step.selector).press(step.key, timeout=ctx.timeout_ms)
    else:
        await ctx.page.keyboard.press(step.key)
    await settle(ctx.page, ctx.timeout_ms)


async def hover(ctx: StepContext, step: HoverStep) -> Any:
    """Move the mouse over the element (menus that open on hover)."""
    await first(ctx, step.selector).hover(timeout=ctx.timeout_ms)
