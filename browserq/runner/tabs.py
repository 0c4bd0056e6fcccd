"""The run's pages: which one the steps act on, who opened whom, and moving between them.

A run starts on one page. Every page its context opens later (a ``target=_blank`` link,
``window.open``) is followed from the moment it exists: a step with ``opens: tab`` waits for it
and makes it the current page; ``switch_tab`` and ``close_tab`` move between pages. Whatever
watches "the run's page" follows the current one: the runner's ``BrowserParts.page`` and
``.watchdog`` are switched here, so the failure snapshot (screenshot, DOM), the watchdog's probe
and the checkpoint's URL are those of the page the run is on. Console and network capture
(:class:`~browserq.runner.capture.PageActivity`), the trace and the ``allowed_domains`` guard
are context-wide and cover every page anyway. All pages close with the context.

A page that closes itself (a popup calling ``window.close()``) while it is current hands the run
back to its opener, as a person would see it.

A page's request for a new page is counted the moment it is made (DevTools' ``Page.windowOpen``
on the watchdog's session, before the click that made it returns); Playwright reports the page
only once it is set up, which can be after the next step began. ``switch_tab`` waits (within its
timeout) until every page asked for so far is here, so ``to: last`` right after a click that
calls ``window.open`` is that popup. A run keeps at most :data:`MAX_OPEN_PAGES` pages open: a
page opened beyond that is closed at once and counted (the runner records a ``PAGES_CLOSED``
warning), so a page opening hundreds of popups cannot fill the worker with renderers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import structlog
from playwright.async_api import BrowserContext, Page

from browserq import stealth
from browserq.actions import url_matcher
from browserq.errors import Codes, StepFailed
from browserq.runner.watchdog import PageWatchdog
from browserq.templates.regex import REGEX_PREFIX

log = structlog.get_logger(__name__)

#: The most pages one run keeps open at once (its first page and the popups it follows).
MAX_OPEN_PAGES = 20
#: How long closing a page beyond the cap may take.
CLOSE_TIMEOUT_S = 5.0
#: The longest ``switch_tab`` waits for pages asked for but not here yet (one that never comes:
#: a window the browser refused to open).
ARRIVAL_WAIT_S = 5.0


class _Parts(Protocol):
    """What of the runner's ``BrowserParts`` follows the current page."""

    page: Page | None
    watchdog: PageWatchdog | None
    crashed: bool
    page_dropped: bool


class Tabs:
    """The pages of one run's context, in the order they opened; one of them is current."""

    def __init__(self, context: BrowserContext, parts: _Parts) -> None:
        self._context = context
        self._parts = parts
        self.pages: list[Page] = []  # open pages, oldest first
        self._opener: dict[Page, Page | None] = {}
        self._watchdogs: dict[Page, PageWatchdog] = {}
        self._crashed: set[Page] = set()
        self.previous: Page | None = None
        self._waiters: list[asyncio.Future[Page]] = []
        self.opened = 0  # pages the context opened besides the first (tests, logs)
        self.announced = 0  # pages the run's pages asked for (Page.windowOpen), here or not yet
        self.refused = 0  # pages closed at once over MAX_OPEN_PAGES, not yet reported
        self._closing: set[asyncio.Task[None]] = set()
        context.on("page", self._opened)

    # --- following the context's pages -----------------------------------------------------------
    def adopt(self, page: Page, watchdog: PageWatchdog) -> None:
        """The run's first page (made by the runner before any step)."""
        self._track(page, None)
        watchdog.count_opens(self._announce)
        self._watchdogs[page] = watchdog
        self._parts.page, self._parts.watchdog = page, watchdog

    def _announce(self) -> None:
        self.announced += 1

    def _opened(self, page: Page) -> None:
        if page in self._opener:
            return
        self.opened += 1
        if len(self.pages) >= MAX_OPEN_PAGES:
            self.refused += 1
            task = asyncio.get_running_loop().create_task(self._close_extra(page))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        else:
            self._track(page, self._parts.page)  # opened from the page the run was acting on
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(page)

    @staticmethod
    async def _close_extra(page: Page) -> None:
        try:
            await asyncio.wait_for(page.close(), CLOSE_TIMEOUT_S)
        except Exception as exc:  # it closes with the context at the latest
            log.debug("could not close a page over the cap", error=str(exc)[:200])

    async def caught_up(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until every page the run's pages asked for is here."""
        deadline = time.monotonic() + min(timeout_s, ARRIVAL_WAIT_S)
        while self.opened < self.announced and (left := deadline - time.monotonic()) > 0:
            waiter: asyncio.Future[Page] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await asyncio.wait_for(waiter, left)
            except TimeoutError:
                log.debug("pages asked for did not arrive", announced=self.announced, opened=self.opened)
            finally:
                self._waiters.remove(waiter)

    def take_refused(self) -> int:
        """Pages closed over the cap since the last call (the runner records them)."""
        refused, self.refused = self.refused, 0
        return refused

    def _track(self, page: Page, opener: Page | None) -> None:
        self.pages.append(page)
        self._opener[page] = opener
        page.on("crash", self._on_crash)
        page.on("close", self._on_close)

    def _on_crash(self, page: Page) -> None:
        self._crashed.add(page)
        if page is self._parts.page:
            self._parts.crashed = True

    def _on_close(self, page: Page) -> None:
        if page in self.pages:
            self.pages.remove(page)
        if page is self.previous:
            self.previous = None
        if page is self._parts.page and not self._parts.crashed and not self._parts.page_dropped:
            back = self._back_from(page)
            if back is not None:  # a popup that closed itself: the run is back on its opener
                self._make_current(back)

    # --- moving between pages --------------------------------------------------------------------
    @property
    def current(self) -> Page | None:
        return self._parts.page

    def index_of(self, page: Page | None) -> int | None:
        return self.pages.index(page) if page in self.pages else None

    async def opening(self, act: Callable[[], Awaitable[Any]], timeout_s: float) -> Any:
        """Run ``act`` (a click), wait up to ``timeout_s`` for the page it opens, go on there."""
        waiter: asyncio.Future[Page] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        started = time.monotonic()
        try:
            output = await act()
            left = max(0.05, timeout_s - (time.monotonic() - started))
            try:
                page = await asyncio.wait_for(asyncio.shield(waiter), left)
            except TimeoutError:
                raise StepFailed(
                    Codes.TAB_NOT_OPENED,
                    f"the step has opens: tab, but no new page opened within {timeout_s:.1f} s "
                    "(is it a link with target=_blank or a window.open?)",
                ) from None
        finally:
            self._waiters.remove(waiter)
        await stealth.ready(page)  # an identity's per-page overrides, as on the first page
        left_ms = max(50.0, (timeout_s - (time.monotonic() - started)) * 1000)
        await self.switch(page)
        try:
            await page.wait_for_load_state("domcontentloaded", timeout=left_ms)
        except Exception as exc:  # a blocked popup, or a slow one: the step's checks decide
            log.debug("new page did not reach domcontentloaded", error=str(exc)[:200])
        return output

    def find(self, to: int | str) -> Page:
        """The open page ``switch_tab: to:`` names (TAB_NOT_FOUND if none does)."""
        current = self._parts.page
        found: Page | None = None
        if isinstance(to, int):
            found = self.pages[to] if to < len(self.pages) else None
        elif to == "opener":
            found = self._opener.get(current) if current is not None else None
            found = found if found in self.pages else None
        elif to == "previous":
            found = self.previous if self.previous in self.pages else None
        elif to in ("first", "last"):
            found = self.pages[0 if to == "first" else -1] if self.pages else None
        else:
            matches = url_matcher(to)  # INVALID_STEP_INPUT for a bad pattern built from params
            hits = [p for p in self.pages if matches(p.url)]
            found = hits[-1] if hits else None  # the newest page that matches
        if found is None:
            raise StepFailed(Codes.TAB_NOT_FOUND, f"switch_tab: no open page is {_named(to)} ({self.describe()})")
        return found

    async def switch(self, page: Page) -> None:
        """Make ``page`` the current page; its watchdog is attached while it is idle."""
        if page.is_closed():
            raise StepFailed(Codes.TAB_NOT_FOUND, "switch_tab: that page is closed")
        if page is not self._parts.page:
            self.previous = self._parts.page
        self._make_current(page)
        watchdog = self._parts.watchdog
        assert watchdog is not None
        await watchdog.attach()

    def _make_current(self, page: Page) -> None:
        watchdog = self._watchdogs.get(page)
        if watchdog is None:
            watchdog = self._watchdogs[page] = PageWatchdog(self._context, page)
            watchdog.count_opens(self._announce)
        self._parts.page, self._parts.watchdog = page, watchdog
        self._parts.crashed = page in self._crashed
        self._parts.page_dropped = False

    def _back_from(self, page: Page) -> Page | None:
        """Where the run goes when ``page`` closes: its opener, else the page before, else the
        newest page still open."""
        for candidate in (self._opener.get(page), self.previous):
            if candidate is not None and candidate in self.pages and candidate is not page:
                return candidate
        others = [p for p in self.pages if p is not page]
        return others[-1] if others else None

    async def close_current(self, timeout_s: float) -> None:
        """``close_tab``: close the current page, back to its opener (TAB_NOT_FOUND when it is
        the run's only page: the run would have nowhere to go)."""
        page = self._parts.page
        assert page is not None
        back = self._back_from(page)
        if back is None:
            raise StepFailed(Codes.TAB_NOT_FOUND, "close_tab: this is the run's only open page")
        self.previous = None
        await self.switch(back)
        await asyncio.wait_for(page.close(), timeout_s)

    async def open_new(self, timeout_s: float) -> Page:
        """``new_tab``: a new blank page, opened by the current one (``close_tab`` goes back
        there), made current. TAB_NOT_OPENED when the run has :data:`MAX_OPEN_PAGES` open."""
        if len(self.pages) >= MAX_OPEN_PAGES:
            raise StepFailed(Codes.TAB_NOT_OPENED, f"new_tab: the run has {len(self.pages)} pages open, the most "
                             "it keeps (close_tab one first)")
        page = await asyncio.wait_for(stealth.new_page(self._context), timeout_s)
        self._opened(page)  # tracked now, whether the context's event came first or comes later
        await self.switch(page)
        return page

    async def reopen(self, urls: list[str], index: int, timeout_s: float) -> Page | None:
        """A resume in a fresh context: a page for each of a checkpoint's ``urls`` (oldest first;
        the first is the run's own page), each but the ``index``-th loaded at its URL; that one
        is made current and returned, for the caller to load. A page that does not load stays
        where it stopped (the run goes on: it was not the run's page). None (nothing done) when
        ``index`` names none of them."""
        if not 0 <= index < len(urls) <= MAX_OPEN_PAGES or len(self.pages) != 1:
            return None
        while len(self.pages) < len(urls):
            self._opened(await stealth.new_page(self._context))  # tracked now, event or not
        for position, (page, url) in enumerate(zip(self.pages, urls, strict=False)):
            if position != index and url.startswith(("http://", "https://")):
                try:
                    await page.goto(url, timeout=timeout_s * 1000)
                except Exception as exc:  # no URL in the log: it may carry a token
                    log.warning("a page of the checkpoint did not load again", tab=position,
                                error=type(exc).__name__)
        page = self.pages[index]
        await self.switch(page)
        return page

    def describe(self) -> str:
        """The open pages for a message: ``0 http://a/ (current), 1 http://b/``."""
        parts = []
        for index, page in enumerate(self.pages):
            mark = " (current)" if page is self._parts.page else ""
            parts.append(f"{index} {page.url[:120]}{mark}")
        return "open pages: " + ", ".join(parts) if parts else "no open pages"

    async def detach_all(self) -> None:
        """Release every page's watchdog session and finish closing pages over the cap (the run ends)."""
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=CLOSE_TIMEOUT_S)
        for watchdog in list(self._watchdogs.values()):
            await watchdog.detach()


def _named(to: int | str) -> str:
    if isinstance(to, int):
        return f"tab {to}"
    if to in ("opener", "previous", "first", "last"):
        return f"the {to} page"
    kind = "regex" if to.startswith(REGEX_PREFIX) else "glob"
    return f"a page whose URL matches the {kind} {to!r}"
