"""Finding things on the page: selectors (with ``>>>`` into iframes), URL patterns, settling.

Shared by the actions and by the runner's own checks (``optional``, ``until_missing``, probes).
"""

from __future__ import annotations

from collections.abc import Callable

from playwright.async_api import Locator, Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from browserq.actions.context import StepContext
from browserq.errors import Codes, StepFailed
from browserq.templates.regex import RegexError, describe_url_pattern, url_predicate


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
    """The first match of ``selector`` on the step's page (what a person means by "the button")."""
    return locate(ctx.page, selector).first


def url_matcher(pattern: str) -> Callable[[str], bool]:
    """``re:...`` is a regular expression; anything else is a Playwright glob. Both run in RE2
    (linear time): a pattern from a param cannot stall the worker."""
    try:
        return url_predicate(pattern)
    except RegexError as exc:
        raise StepFailed(Codes.INVALID_STEP_INPUT, f"{describe_url_pattern(pattern)}: {exc}") from None

