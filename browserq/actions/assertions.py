"""``assert``: check the page; a failed assertion is permanent and says what was expected."""

from __future__ import annotations

from typing import Any

from browserq.actions.context import StepContext
from browserq.actions.locate import first, url_matcher
from browserq.browsers.api import TimeoutError as PlaywrightTimeoutError
from browserq.browsers.api import expect
from browserq.errors import Codes, StepFailed
from browserq.templates import AssertStep
from browserq.templates.interpolate import rendered_number

#: A failed assert waits at most this long unless the step sets its own timeout_s.
ASSERT_TIMEOUT_S = 5.0


async def assert_(ctx: StepContext, step: AssertStep) -> Any:
    """Check the page; a failed assertion is permanent and says what was expected."""
    timeout = (rendered_number(step.timeout_s, "timeout_s") if step.timeout_s else ASSERT_TIMEOUT_S) * 1000
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
    """What the assertion expected, in words, for its failure message."""
    if step.url is not None:
        return f"expected the URL to match {step.url!r}"
    if step.text is not None:
        where = f" in {step.within!r}" if step.within else ""
        return f"expected text {step.text!r}{where}"
    state = "present" if step.exists else "absent"
    return f"expected {step.selector!r} to be {state}"
