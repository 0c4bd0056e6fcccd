"""One long-lived Chromium per worker process, handing out a fresh isolated context per run.

The browser is launched once and reused; a *context* (cookies, storage, cache) is created for each
run and closed after it, which is what actually releases memory. The browser is relaunched only
when it is gone (crashed, killed, disconnected) — never because a page misbehaved.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from playwright.async_api import Browser, BrowserContext, Playwright, async_playwright

from browserq.browsers.launcher import browser_process_tree, find_browser_pid, launch_chromium, rss_bytes
from browserq.errors import InfrastructureError
from browserq.settings import Settings

log = structlog.get_logger(__name__)

#: Context defaults: a common desktop size instead of Playwright's tell-tale 1280x720.
DEFAULT_CONTEXT_OPTIONS: dict[str, Any] = {
    "viewport": {"width": 1366, "height": 768},
    "accept_downloads": False,
}

CLOSE_TIMEOUT_S = 10.0


class BrowserPool:
    """Owns Playwright and one Chromium; must be used only on the loop that started it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._marker: str | None = None
        self._pid: int | None = None  # remembered: a dead browser can no longer be looked up
        self._lock = asyncio.Lock()
        self._contexts: set[BrowserContext] = set()
        self.launches = 0
        self.contexts_created = 0

    # --- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the driver, launch Chromium and warm it with one throwaway page."""
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        await self._ensure_browser()
        context = await self.new_context()
        try:
            page = await context.new_page()
            await page.goto("about:blank")
        finally:
            await self.close_context(context)

    async def stop(self) -> None:
        """Close every context, the browser and the driver; safe to call twice."""
        for context in list(self._contexts):
            await self.close_context(context)
        if self._browser is not None:
            try:
                await asyncio.wait_for(self._browser.close(), CLOSE_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - already shutting down
                log.warning("browser close failed", error=str(exc))
            self._browser = None
        if self._playwright is not None:
            try:
                await asyncio.wait_for(self._playwright.stop(), CLOSE_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001
                log.warning("playwright stop failed", error=str(exc))
            self._playwright = None

    async def _ensure_browser(self) -> Browser:
        async with self._lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            if self._playwright is None:
                raise RuntimeError("BrowserPool.start() was not called")
            if self._browser is not None:
                log.warning("browser disconnected; relaunching", previous_pid=self._pid)
                self._contexts.clear()
                try:
                    await asyncio.wait_for(self._browser.close(), CLOSE_TIMEOUT_S)
                except Exception:  # noqa: BLE001 - it is already gone
                    pass
            self._browser, self._marker = await launch_chromium(self._playwright, self._settings)
            self._pid = find_browser_pid(self._marker)
            self.launches += 1
            log.info("browser launched", pid=self.pid, launches=self.launches)
            return self._browser

    # --- contexts --------------------------------------------------------------------------
    async def new_context(self, **options: Any) -> BrowserContext:
        """A fresh isolated context; relaunches the browser first if it is gone."""
        browser = await self._ensure_browser()
        try:
            context = await browser.new_context(**{**DEFAULT_CONTEXT_OPTIONS, **options})
        except Exception as exc:
            if not browser.is_connected():
                raise InfrastructureError(f"browser disconnected while creating a context: {exc}") from exc
            raise
        self._contexts.add(context)
        self.contexts_created += 1
        return context

    async def close_context(self, context: BrowserContext) -> None:
        """Close a run's context, never raising: a dead context is already closed."""
        self._contexts.discard(context)
        try:
            await asyncio.wait_for(context.close(), CLOSE_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001
            log.debug("context close failed", error=str(exc))

    # --- health ------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    @property
    def pid(self) -> int | None:
        return find_browser_pid(self._marker) if self._marker else None

    @property
    def marker(self) -> str | None:
        return self._marker

    def rss_bytes(self) -> int:
        """Resident memory of the whole Chromium process tree."""
        return rss_bytes(browser_process_tree(self._marker)) if self._marker else 0

    @property
    def open_contexts(self) -> int:
        return len(self._contexts)
