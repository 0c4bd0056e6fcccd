"""Finding things on the page: selectors (with ``>>>`` into iframes), URL patterns, settling.

Shared by the actions and by the runner's own checks (``optional``, ``until_missing``, probes).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.async_api import Error as PlaywrightError
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


#: Selectors the browser's own CSS must not answer for Playwright: engine prefixes (``text=``,
#: ``xpath=``, ``internal:role=``…), XPath, quoted text, chains (``>>``), and ``:not(``, whose
#: native answer can differ from Playwright's shadow-piercing one. Anything else the browser
#: rejects (``:has-text()``, ``:visible``…) is caught in the page and asked of Playwright too.
_PLAYWRIGHT_ONLY = re.compile(r"^\s*(?:[\w-]+(?::[\w-]+)*\s*=|//|\.\.|[\"'])|>>|:not\(")

#: One round trip for a presence check on a loaded page: the document's readiness and the match
#: in one evaluate. "engine" hands the question to Playwright's locator: a selector the native
#: CSS cannot parse, or a miss on a page with open shadow roots (Playwright's CSS pierces them).
#: The prototype's methods: a page that replaces ``document.querySelector`` does not answer.
_PRESENCE_JS = """
(selector) => {
  if (document.readyState === 'loading') return 'loading';
  let found;
  try { found = Document.prototype.querySelector.call(document, selector); } catch (e) { return 'engine'; }
  if (found) return 'present';
  for (const el of Document.prototype.querySelectorAll.call(document, '*')) {
    if (el.shadowRoot) return 'engine';
  }
  return 'missing';
}
"""


async def present(page: Page, selector: str, settle_ms: float = 5000) -> bool:
    """Whether anything matches ``selector`` on the page now (``optional``, ``until_missing``).

    A parsed document answers in one evaluate: the page itself says whether it is still loading
    (no client-side guess about which navigation was awaited). A document still loading, a frame
    selector (``>>>``), a selector of Playwright's own engines or a navigation that replaced the
    document mid-check: wait for DOMContentLoaded, then Playwright's locator decides, so a page
    still loading is never judged "missing".
    """
    if FRAME_SEPARATOR not in selector and not _PLAYWRIGHT_ONLY.search(selector):
        try:
            answer = await page.evaluate(_PRESENCE_JS, selector)
        except PlaywrightTimeoutError:
            raise
        except PlaywrightError:  # the document went away under the check: ask again, settled
            answer = "engine"
        if answer in ("present", "missing"):
            return answer == "present"
    await settle(page, settle_ms)
    return await locate(page, selector).count() > 0


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

