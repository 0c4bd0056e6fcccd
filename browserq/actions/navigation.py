"""Moving around: navigate, go_back, scroll and wait."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from playwright.async_api import Page

from browserq.actions.context import StepContext
from browserq.actions.locate import first, url_matcher
from browserq.actions.notices import WAIT_SHORTENED
from browserq.browsers.api import Error as PlaywrightError
from browserq.browsers.api import TimeoutError as PlaywrightTimeoutError
from browserq.errors import Codes, StepFailed
from browserq.guards import check_url
from browserq.templates import GoBackStep, NavigateStep, ScrollStep, WaitStep
from browserq.templates.interpolate import rendered_number

#: The net error a 407 stands for (browsers/errors.py's table: a proxy failure of kind ``auth``).
PROXY_AUTH_ERROR = "ERR_PROXY_AUTH_REQUESTED"


async def navigate(ctx: StepContext, step: NavigateStep) -> Any:
    """Open the URL (inside allowed_domains); an HTTP error status is the step's failure."""
    check_url(step.url, ctx.settings.allowed_domains)
    response = await ctx.page.goto(step.url, wait_until=step.wait_until, timeout=ctx.timeout_ms)
    status = response.status if response is not None else None
    if status == 407:  # only a proxy sends it: Chromium fails the load; the headless shell shows it
        raise StepFailed(Codes.PROXY_FAILED, f"net::{PROXY_AUTH_ERROR} at {step.url}: the proxy answered "
                         "HTTP 407 (it asks for credentials the run's proxy entry does not give)")
    if status is not None and status >= 400:
        if status in (403, 429):
            raise StepFailed(Codes.BLOCKED, f"{step.url} answered HTTP {status}")
        code = Codes.HTTP_5XX if status >= 500 else Codes.HTTP_4XX
        raise StepFailed(code, f"{step.url} answered HTTP {status}")
    return {"status": status, "url": ctx.page.url}


async def go_back(ctx: StepContext, step: GoBackStep) -> Any:
    """Go back one page in the tab's history; ``NAVIGATION_FAILED`` when there is none (the blank
    page a tab starts on does not count: landing there, the step goes forward again and fails).
    The page it lands on is held to allowed_domains by the context's guards, as any navigation.
    ``status`` is None for a page restored from the back/forward cache (no response)."""
    page, before = ctx.page, ctx.page.url
    # Wait for the commit, then for the load state within the step's time: a page restored from the
    # back/forward cache fires no new load, and a driver that keeps that cache on (patchright) would
    # otherwise wait for it until the timeout.
    response = await page.go_back(wait_until="commit", timeout=ctx.timeout_ms)
    if response is None and page.url in (before, "about:blank"):
        if page.url != before:
            await _forward_from_blank(page, step.wait_until, ctx.timeout_ms)
        raise StepFailed(Codes.NAVIGATION_FAILED, f"no earlier page in this tab's history (still on {before})")
    if step.wait_until != "commit":
        with contextlib.suppress(PlaywrightTimeoutError):
            await page.wait_for_load_state(step.wait_until, timeout=min(ctx.timeout_ms, BFCACHE_LOAD_WAIT_MS))
    return {"status": response.status if response is not None else None, "url": page.url}


#: How long go_back waits for a load state after the commit (a cached page may never fire one).
BFCACHE_LOAD_WAIT_MS = 5_000

#: Chromium's answer while a tab that just went back to its first blank page swaps renderers.
_DETACHED = "Not attached to an active page"


async def _forward_from_blank(page: Page, wait_until: Any, timeout_ms: float) -> None:
    """Go forward again from the blank page go_back landed on. Right after that commit Chromium
    may still be swapping the tab's renderer and refuse the history lookup (``_DETACHED``, seen
    under load): that is asked again once the blank page has loaded. Every try shares the step's
    time: none is given the whole of it again."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_ms / 1000
    while True:
        try:
            await page.go_forward(wait_until=wait_until, timeout=max(1.0, (deadline - loop.time()) * 1000))
            return
        except PlaywrightError as exc:
            if _DETACHED not in str(exc) or loop.time() >= deadline:
                raise
            with contextlib.suppress(PlaywrightTimeoutError):
                await page.wait_for_load_state("load", timeout=max(1.0, (deadline - loop.time()) * 1000))
            await asyncio.sleep(0.05)  # the swap has no event of its own to wait for


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
    if step.to == "bottom" and (settle_ms := rendered_number(step.settle_ms, "settle_ms")) > 0:
        try:
            await page.wait_for_function(
                f"h => {_HEIGHT_JS[6:]} > h", arg=before, timeout=min(settle_ms, ctx.timeout_ms)
            )
            grew = True
        except PlaywrightTimeoutError:
            grew = False
    return {"height": await page.evaluate(_HEIGHT_JS), "grew": grew}


async def wait(ctx: StepContext, step: WaitStep) -> Any:
    """Wait for an element state, a URL, a load state, or a time (never longer than the step may take)."""
    page = ctx.page
    if step.selector:
        await first(ctx, step.selector).wait_for(state=step.state, timeout=ctx.timeout_ms)
    elif step.url:
        await page.wait_for_url(url_matcher(step.url), timeout=ctx.timeout_ms)
    elif step.load_state:
        await page.wait_for_load_state(step.load_state, timeout=ctx.timeout_ms)
    elif step.ms is not None:
        ms = rendered_number(step.ms, "ms")
        allowed_ms = ctx.timeout_ms
        if ms > allowed_ms:
            ctx.warn(
                WAIT_SHORTENED,
                f"waited {allowed_ms / 1000:g} s of the {ms / 1000:g} s asked: the step may take "
                "no longer (raise its timeout_s, or the run's)",
            )
        await asyncio.sleep(min(ms, allowed_ms) / 1000)
