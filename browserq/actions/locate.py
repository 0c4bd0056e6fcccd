"""Finding things on the page: selectors (strings, ``>>>`` into iframes, locator mappings), URL
patterns, settling.

Shared by the actions and by the runner's own checks (``optional``, ``until_missing``, probes).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.async_api import Locator, Page

from browserq.actions.context import StepContext
from browserq.actions.locators import FRAME_SEPARATOR, SelectorValue, to_locator
from browserq.browsers.api import Error as PlaywrightError
from browserq.browsers.api import TimeoutError as PlaywrightTimeoutError
from browserq.errors import Codes, StepFailed
from browserq.templates.regex import RegexError, describe_url_pattern, url_predicate


async def settle(page: Page, timeout_ms: float) -> None:
    """Let a navigation started by the last input reach DOMContentLoaded (no-op otherwise)."""
    try:
        await page.wait_for_load_state("domcontentloaded", timeout=timeout_ms)
    except PlaywrightTimeoutError:
        pass


def locate(page: Page, selector: SelectorValue) -> Locator:
    """A locator for any selector, a string (``>>>`` steps into iframes) or a locator mapping:
    :func:`~browserq.actions.locators.to_locator`, under the name the runner has always used."""
    return to_locator(page, selector)


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


async def present(page: Page, selector: SelectorValue, settle_ms: float = 5000) -> bool:
    """Whether anything matches ``selector`` on the page now (``optional``, ``until_missing``).

    A parsed document answers in one evaluate: the page itself says whether it is still loading
    (no client-side guess about which navigation was awaited). A document still loading, a frame
    selector (``>>>``), a selector of Playwright's own engines or a navigation that replaced the
    document mid-check: wait for DOMContentLoaded, then Playwright's locator decides, so a page
    still loading is never judged "missing". A locator mapping (``{role: button, name: Send}``)
    is Playwright's to answer too.
    """
    if isinstance(selector, str) and FRAME_SEPARATOR not in selector and not _PLAYWRIGHT_ONLY.search(selector):
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


def first(ctx: StepContext, selector: SelectorValue) -> Locator:
    """The first match of ``selector`` on the step's page (what a person means by "the button")."""
    return locate(ctx.page, selector).first


def url_matcher(pattern: str) -> Callable[[str], bool]:
    """``re:...`` is a regular expression; anything else is a Playwright glob. Both run in RE2
    (linear time): a pattern from a param cannot stall the worker."""
    try:
        return url_predicate(pattern)
    except RegexError as exc:
        raise StepFailed(Codes.INVALID_STEP_INPUT, f"{describe_url_pattern(pattern)}: {exc}") from None

