"""The page checks every part of the runner shares: the run's current page, the guards that
turn what the browser refused into a failure (allowed_domains), running an action's handler, and
what a step attempt's record keeps of the step. Plain functions over the run's state.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from playwright.async_api import Page

from browserq.actions import StepContext, handler_for, notices, present
from browserq.actions.locators import SelectorValue
from browserq.errors import Codes, StepFailed
from browserq.guards import check_url
from browserq.runner.state import RunState
from browserq.templates import ActionStep

#: How long each part of a failure snapshot may take: a sick page must not hold the worker.
SNAPSHOT_TIMEOUT_S = 3.0
#: The screenshot's own bound, longer: it is the evidence a person opens first, and on a loaded
#: host (a CI machine at load 16) a healthy page's full-page capture took more than 3 s.
SCREENSHOT_TIMEOUT_S = 10.0

DROPPED = "the page stopped answering (a script that never ends) and was closed"


def current_page(state: RunState) -> Page:
    """The run's page, or PAGE_CRASHED when it is gone."""
    browser = state.browser
    if browser.page_dropped:
        raise StepFailed(Codes.PAGE_CRASHED, DROPPED)
    if browser.crashed or browser.page is None or browser.page.is_closed():
        raise StepFailed(Codes.PAGE_CRASHED, "the page crashed or was closed")
    return browser.page


def warn(state: RunState, path: str, code: str, message: str) -> None:
    """The run succeeded (so far) but a limit cut its result short: say so in the result."""
    state.warnings.append(notices.run_warning(path, code, state.redactor.text(message)))


def top_level_index(path: str) -> int:
    """The index of the top-level step a step path is in (``"3"``, ``"1[2].0"`` → 3, 1)."""
    digits = len(path) - len(path.lstrip("0123456789"))
    return int(path[:digits]) if digits else 0


async def missing(page: Page, selector: SelectorValue, timeout_s: float | None = None) -> bool | None:
    """Whether nothing matches ``selector``; None when the page did not tell within ``timeout_s``."""
    try:
        async with asyncio.timeout(timeout_s):
            return not await present(page, selector)
    except TimeoutError:
        return None
    except Exception:
        return False


def domain_failure(state: RunState) -> StepFailed | None:
    """DOMAIN_DENIED for documents the browser refused to send since the last report, or None."""
    domains = state.browser.domains
    if domains is None:
        return None
    urls = domains.take_unreported()
    if not urls:
        return None
    shown = ", ".join(urls[:3]) + (f" and {len(urls) - 3} more" if len(urls) > 3 else "")
    return StepFailed(
        Codes.DOMAIN_DENIED,
        f"blocked before it was sent: a document request to {shown} "
        f"(host outside allowed_domains: {', '.join(domains.allowed_domains)})",
    )


async def run_handler(ctx: StepContext, state: RunState, step: ActionStep) -> Any:
    """The action's handler, under the step's ``dialog:`` answer; with ``opens: tab`` it
    waits for the page the action opens and goes on there (TAB_NOT_OPENED, or DOMAIN_DENIED
    when allowed_domains refused the new page)."""
    dialogs, tabs = state.browser.dialogs, state.browser.tabs
    if dialogs is not None:
        dialogs.arm(step.dialog)
    try:
        if getattr(step, "opens", None) == "tab" and tabs is not None:
            assert ctx.step_deadline is not None
            try:
                return await tabs.opening(
                    lambda: handler_for(step)(ctx, step), ctx.step_deadline - time.monotonic()
                )
            except StepFailed as exc:
                raise (domain_failure(state) or exc) from None
        try:
            return await handler_for(step)(ctx, step)
        except Exception:
            current = tabs.current if tabs is not None else None
            if ctx.page.is_closed() and current is not None and current is not ctx.page and not current.is_closed():
                return None  # the action closed its own page (window.close()): back on its opener
            raise
    finally:
        if dialogs is not None:
            dialogs.arm(None)


def raise_if_blocked(state: RunState) -> None:
    """Fail with DOMAIN_DENIED when the browser refused a document since the last check."""
    failure = domain_failure(state)
    if failure is not None:
        raise failure


def check_landing(page: Page, allowed_domains: list[str]) -> None:
    """A step that ended on a host outside allowed_domains (a click, a redirect) fails."""
    if allowed_domains and page.url.startswith(("http://", "https://")):
        check_url(page.url, allowed_domains)


def step_inputs(step: ActionStep) -> dict[str, object]:
    """What a step attempt's record keeps of the step: its fields as written, and the action."""
    return step.model_dump(exclude_none=True, exclude_defaults=True, by_alias=True) | {"action": step.action}
