"""One coroutine per template action. Each does one job and returns the step's output (or None).

Actions raise :class:`StepFailed` with a specific code for anything the page or the template did
wrong; Playwright exceptions that escape are translated by the runner. Element actions use the
first match of a selector: templates are written against live sites where "the first button that
matches" is what a person means.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import Locator, Page, expect
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from browserq import stealth
from browserq.errors import Codes, StepFailed
from browserq.guards import check_url, safe_artifact_path
from browserq.runner import notices
from browserq.runner.context import StepContext
from browserq.runner.outputs import evaluate_bounded, too_large
from browserq.templates import (
    ActionStep,
    AssertStep,
    CheckStep,
    ClickStep,
    EvalStep,
    ExtractStep,
    FieldSpec,
    FillStep,
    GetStep,
    HoverStep,
    NavigateStep,
    PressStep,
    ScreenshotStep,
    ScrollStep,
    SelectStep,
    TypeStep,
    UncheckStep,
    WaitStep,
)
from browserq.templates.regex import RegexError, describe_url_pattern, url_predicate

Action = Callable[[StepContext, Any], Awaitable[Any]]

#: A failed assert waits at most this long unless the step sets its own timeout_s.
ASSERT_TIMEOUT_S = 5.0


async def settle(page: Page, timeout_ms: float) -> None:
    """Let a navigation started by the last input reach DOMContentLoaded (no-op otherwise)."""
    try:
        await page.wait_for_load_state("domcontentloaded", timeout=timeout_ms)
    except PlaywrightTimeoutError:
        pass


#: ``"iframe#pay >>> button.submit"`` enters the frame matched on the left, then selects inside it.
FRAME_SEPARATOR = ">>>"


def locate(page: Page, selector: str) -> Locator:
    """A locator for a Playwright selector, with ``>>>`` stepping into (nested) iframes."""
    if FRAME_SEPARATOR not in selector:
        return page.locator(selector)
    *frames, inner = [part.strip() for part in selector.split(FRAME_SEPARATOR)]
    scope = page.frame_locator(frames[0])
    for frame in frames[1:]:
        scope = scope.frame_locator(frame)
    return scope.locator(inner)


def first(ctx: StepContext, selector: str) -> Locator:
    return locate(ctx.page, selector).first


def url_matcher(pattern: str) -> Callable[[str], bool]:
    """``re:...`` is a regular expression; anything else is a Playwright glob. Both run in RE2
    (linear time): a pattern from a param cannot stall the worker."""
    try:
        return url_predicate(pattern)
    except RegexError as exc:
        raise StepFailed(Codes.INVALID_STEP_INPUT, f"{describe_url_pattern(pattern)}: {exc}") from None


# --- navigation and input ------------------------------------------------------------------
async def navigate(ctx: StepContext, step: NavigateStep) -> Any:
    check_url(step.url, ctx.settings.allowed_domains)
    response = await ctx.page.goto(step.url, wait_until=step.wait_until, timeout=ctx.timeout_ms)
    status = response.status if response is not None else None
    if status is not None and status >= 400:
        if status in (403, 429):
            raise StepFailed(Codes.BLOCKED, f"{step.url} answered HTTP {status}")
        code = Codes.HTTP_5XX if status >= 500 else Codes.HTTP_4XX
        raise StepFailed(code, f"{step.url} answered HTTP {status}")
    return {"status": status, "url": ctx.page.url}


async def click(ctx: StepContext, step: ClickStep) -> Any:
    locator = first(ctx, step.selector)
    if ctx.settings.human_input and step.button == "left" and step.click_count == 1:
        await locator.wait_for(state="visible", timeout=ctx.timeout_ms)
        await stealth.move_and_click(ctx.page, locator, random.Random())
    else:
        await locator.click(button=step.button, click_count=step.click_count, timeout=ctx.timeout_ms)
    await settle(ctx.page, ctx.timeout_ms)


async def fill(ctx: StepContext, step: FillStep) -> Any:
    """Replace the field's value (fill clears first) and check that the page kept it."""
    locator = first(ctx, step.selector)
    await locator.fill(step.value, timeout=ctx.timeout_ms)
    actual = await locator.input_value(timeout=ctx.timeout_ms)
    if actual != step.value:
        raise StepFailed(
            Codes.VALUE_MISMATCH,
            f"{step.selector} holds {ctx.redactor.text(actual)!r} after fill, not the value given",
        )


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
    await ctx.page.keyboard.type(step.text, delay=step.delay_ms)


async def select(ctx: StepContext, step: SelectStep) -> Any:
    values = [step.value] if isinstance(step.value, str) else list(step.value)
    locator = first(ctx, step.selector)
    if step.by == "label":
        selected = await locator.select_option(label=values, timeout=ctx.timeout_ms)
    else:
        selected = await locator.select_option(value=values, timeout=ctx.timeout_ms)
    return selected  # the option values now selected (what ``into:`` stores)


async def check(ctx: StepContext, step: CheckStep) -> Any:
    await first(ctx, step.selector).check(timeout=ctx.timeout_ms)


async def uncheck(ctx: StepContext, step: UncheckStep) -> Any:
    await first(ctx, step.selector).uncheck(timeout=ctx.timeout_ms)


async def press(ctx: StepContext, step: PressStep) -> Any:
    if step.selector:
        await first(ctx, step.selector).press(step.key, timeout=ctx.timeout_ms)
    else:
        await ctx.page.keyboard.press(step.key)
    await settle(ctx.page, ctx.timeout_ms)


async def hover(ctx: StepContext, step: HoverStep) -> Any:
    await first(ctx, step.selector).hover(timeout=ctx.timeout_ms)


_HEIGHT_JS = "() => (document.scrollingElement || document.documentElement).scrollHeight"


async def _scrolled(page: Page, before: int) -> dict[str, Any]:
    height = await page.evaluate(_HEIGHT_JS)
    return {"height": height, "grew": height > before}


async def scroll(ctx: StepContext, step: ScrollStep) -> Any:
    """Scroll by pixels, to an element, or to the top/bottom; bottom waits for more content."""
    page = ctx.page
    before = await page.evaluate(_HEIGHT_JS)
    if step.selector:
        await first(ctx, step.selector).scroll_into_view_if_needed(timeout=ctx.timeout_ms)
        return await _scrolled(page, before)
    if step.pixels is not None:
        await page.evaluate("dy => window.scrollBy(0, dy)", step.pixels)
        return await _scrolled(page, before)
    target = "0" if step.to == "top" else "(document.scrollingElement || document.documentElement).scrollHeight"
    await page.evaluate(f"() => window.scrollTo(0, {target})")
    grew = False
    if step.to == "bottom" and step.settle_ms > 0:
        try:
            await page.wait_for_function(
                f"h => {_HEIGHT_JS[6:]} > h", arg=before, timeout=min(step.settle_ms, ctx.timeout_ms)
            )
            grew = True
        except PlaywrightTimeoutError:
            grew = False
    return {"height": await page.evaluate(_HEIGHT_JS), "grew": grew}


async def wait(ctx: StepContext, step: WaitStep) -> Any:
    page = ctx.page
    if step.selector:
        await first(ctx, step.selector).wait_for(state=step.state, timeout=ctx.timeout_ms)
    elif step.url:
        await page.wait_for_url(url_matcher(step.url), timeout=ctx.timeout_ms)
    elif step.load_state:
        await page.wait_for_load_state(step.load_state, timeout=ctx.timeout_ms)
    elif step.ms is not None:
        allowed_ms = ctx.timeout_ms
        if step.ms > allowed_ms:
            ctx.warn(
                notices.WAIT_SHORTENED,
                f"waited {allowed_ms / 1000:g} s of the {step.ms / 1000:g} s asked: the step may take "
                "no longer (raise its timeout_s, or the run's)",
            )
        await asyncio.sleep(min(step.ms, allowed_ms) / 1000)


# --- reading the page ----------------------------------------------------------------------
_PLAYWRIGHT_ONLY = re.compile(r"^(text|role|xpath|css|id|data-testid|internal:|nth)[=:]|>>|^//|:has-text\(")

#: Runs in the page: for each matched element, read every field with a shadow-piercing
#: querySelector. One round trip for a whole page of records instead of one per field.
_EXTRACT_JS = """
(elements, [fields, bounds]) => {
  const deepQuery = (root, selector, all) => {
    const found = [];
    const visit = (node) => {
      for (const el of node.querySelectorAll(selector)) { found.push(el); if (!all) return true; }
      for (const el of [node, ...node.querySelectorAll('*')]) {
        if (el.shadowRoot && visit(el.shadowRoot) && !all) return true;
      }
      return false;
    };
    visit(root);
    return all ? found : found.slice(0, 1);
  };
  const clean = (s) => (s || '').replace(/\\s+/g, ' ').trim();
  const read = (el, spec) => spec.attr ? el.getAttribute(spec.attr) : spec.html ? el.innerHTML : clean(el.textContent);
  // Only the records asked for (limit), and never more than maxBytes of them: the size is
  // counted here, so a 50 MB extract stops in the page instead of crossing to Python.
  const [limit, maxBytes] = bounds;
  let units = 2;
  const records = [];
  for (const element of (limit === null ? elements : elements.slice(0, limit))) {
    let record;
    if (fields === null) {
      record = clean(element.textContent);
    } else {
      record = {};
      for (const [name, spec] of Object.entries(fields)) {
        const targets = spec.selector ? deepQuery(element, spec.selector, spec.all) : [element];
        const values = targets.map((t) => read(t, spec));
        record[name] = spec.all ? values : (values.length ? values[0] : null);
      }
    }
    units += JSON.stringify(record).length + 2;
    if (units > maxBytes) return {tooLarge: units};
    records.push(record);
  }
  return {records, total: elements.length};
}
"""


def _field_specs(step: ExtractStep) -> dict[str, dict[str, Any]] | None:
    if step.fields is None:
        return None
    specs: dict[str, dict[str, Any]] = {}
    for name, spec in step.fields.items():
        if isinstance(spec, str):
            spec = FieldSpec(selector=spec)
        specs[name] = spec.model_dump()
    return specs


async def extract(ctx: StepContext, step: ExtractStep) -> Any:
    """A list of records, one per element matching ``selector``, with the declared fields."""
    locator = locate(ctx.page, step.selector)
    if not step.allow_empty:
        await locator.first.wait_for(state="attached", timeout=ctx.timeout_ms)
    fields = _field_specs(step)
    if fields is None or all(
        not spec["selector"] or not _PLAYWRIGHT_ONLY.search(spec["selector"]) for spec in fields.values()
    ):
        found = await locator.evaluate_all(_EXTRACT_JS, [fields, [step.limit, ctx.max_output_bytes]])
        if "tooLarge" in found:
            raise too_large("the extract result", int(found["tooLarge"]), ctx.max_output_bytes, at_least=True)
        records, total = found["records"], int(found["total"])
    else:
        elements = await locator.all()
        total = len(elements)
        records = [await _extract_one(element, fields) for element in elements[: step.limit]]
    if step.limit is not None and total > step.limit:
        ctx.warn(
            notices.EXTRACT_LIMITED,
            f"kept the first {step.limit} of {total} records matching {step.selector!r} (limit: {step.limit})",
        )
    return records


async def _extract_one(element: Locator, fields: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Slow path for field selectors only Playwright understands (text=, role=, xpath=…)."""
    record: dict[str, Any] = {}
    for name, spec in fields.items():
        targets = [element] if not spec["selector"] else await element.locator(spec["selector"]).all()
        if not spec["all"]:
            targets = targets[:1]
        values = [await _read(target, spec) for target in targets]
        record[name] = values if spec["all"] else (values[0] if values else None)
    return record


async def _read(element: Locator, spec: dict[str, Any]) -> Any:
    if spec["attr"]:
        return await element.get_attribute(spec["attr"])
    if spec["html"]:
        return await element.inner_html()
    return " ".join((await element.text_content() or "").split())


async def get(ctx: StepContext, step: GetStep) -> Any:
    page = ctx.page
    if step.what == "url":
        return page.url
    if step.what == "title":
        return await page.title()
    assert step.selector is not None  # the model requires it for the other kinds
    if step.what == "count":
        return await locate(page, step.selector).count()
    locator = first(ctx, step.selector)
    if step.what == "text":
        return " ".join((await locator.text_content(timeout=ctx.timeout_ms) or "").split())
    if step.what == "attribute":
        assert step.attribute is not None
        return await locator.get_attribute(step.attribute, timeout=ctx.timeout_ms)
    if step.what == "html":
        return await locator.inner_html(timeout=ctx.timeout_ms)
    return await locator.input_value(timeout=ctx.timeout_ms)


async def evaluate(ctx: StepContext, step: EvalStep) -> Any:
    """Run a JS expression; an exception in the page is the step's failure, nothing more."""
    if not ctx.settings.allow_eval:
        raise StepFailed(Codes.EVAL_DISABLED, "this template does not set settings.allow_eval: true")
    timeout_ms = ctx.timeout_ms  # Playwright does not time out evaluate: this is the step's bound
    try:
        evaluation = evaluate_bounded(ctx.page, step.expression, ctx.max_output_bytes)
        return await asyncio.wait_for(evaluation, timeout_ms / 1000)
    except StepFailed:
        raise  # the result was too large or not data (browserq.runner.outputs)
    except TimeoutError as exc:
        raise StepFailed(Codes.TIMEOUT, f"expression did not finish within {timeout_ms:.0f} ms") from exc
    except Exception as exc:
        if not ctx.page.context.browser or not ctx.page.context.browser.is_connected():
            raise
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StepFailed(Codes.EVAL_ERROR, ctx.redactor.text(message)[:500]) from exc


async def screenshot(ctx: StepContext, step: ScreenshotStep) -> Any:
    name = step.name or f"screenshot-{ctx.step_path}.png"
    safe_artifact_path(ctx.artifact_base, name)  # reject an escaping name before taking the picture
    if step.selector:
        data = await first(ctx, step.selector).screenshot(timeout=ctx.timeout_ms)
    else:
        data = await ctx.page.screenshot(full_page=step.full_page, timeout=ctx.timeout_ms)
    stored = await ctx.save_artifact("screenshot", name, data, "image/png")
    return {"artifact": stored.path, "size": stored.size}


async def assert_(ctx: StepContext, step: AssertStep) -> Any:
    """Check the page; a failed assertion is permanent and says what was expected."""
    timeout = (step.timeout_s or ASSERT_TIMEOUT_S) * 1000
    timeout = min(timeout, ctx.timeout_ms)
    page = ctx.page
    try:
        if step.url is not None:
            try:  # wait_for_url understands globs, which expect().to_have_url does not
                await page.wait_for_url(url_matcher(step.url), wait_until="commit", timeout=timeout)
            except PlaywrightTimeoutError as exc:
                raise AssertionError(str(exc)) from exc
        elif step.text is not None:
            scope = first(ctx, step.within) if step.within else page.locator("body")
            await expect(scope).to_contain_text(step.text, timeout=timeout)
        elif step.selector is not None:
            target = first(ctx, step.selector)
            if step.exists:
                await expect(target).to_be_attached(timeout=timeout)
            else:
                await expect(target).not_to_be_attached(timeout=timeout)
    except AssertionError as exc:
        what = step.message or _describe_assert(step)
        raise StepFailed(Codes.ASSERTION_FAILED, f"{what} (page: {page.url})") from exc


def _describe_assert(step: AssertStep) -> str:
    if step.url is not None:
        return f"expected the URL to match {step.url!r}"
    if step.text is not None:
        where = f" in {step.within!r}" if step.within else ""
        return f"expected text {step.text!r}{where}"
    state = "present" if step.exists else "absent"
    return f"expected {step.selector!r} to be {state}"


ACTION_HANDLERS: dict[str, Action] = {
    "navigate": navigate,
    "click": click,
    "fill": fill,
    "type": type_text,
    "select": select,
    "check": check,
    "uncheck": uncheck,
    "press": press,
    "hover": hover,
    "scroll": scroll,
    "wait": wait,
    "extract": extract,
    "get": get,
    "eval": evaluate,
    "screenshot": screenshot,
    "assert": assert_,
}


def handler_for(step: ActionStep) -> Action:
    return ACTION_HANDLERS[step.action]


def element_selector(step: ActionStep) -> str | None:
    """The selector whose absence makes an ``optional`` step a skip, if the action has one."""
    if step.action in {"navigate", "eval", "screenshot", "assert", "wait"}:
        return None
    return getattr(step, "selector", None)
