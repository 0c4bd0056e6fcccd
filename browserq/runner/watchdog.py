"""Keeping a page's main thread answerable when a template's script will not stop.

Playwright's timeouts do not apply to ``page.evaluate``, and a page whose main thread is stuck in
a loop (an ``eval``, a page script, a catastrophic selector regex) makes every later call on it
hang: the next step, the failure snapshot, the trace. The watchdog probes the page over its own
CDP session and, when it does not answer, ends the running script with
``Runtime.terminateExecution`` (the page and the browser survive); a page that still does not
answer is closed, so only this run loses it — never the browser.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from enum import Enum

import structlog
from playwright.async_api import BrowserContext, CDPSession, Page

log = structlog.get_logger(__name__)

#: How long a healthy page takes at most to answer a trivial evaluation.
PROBE_TIMEOUT_S = 1.0
#: A page script may re-arm itself (setTimeout/setInterval): terminate this many times at most.
TERMINATE_ATTEMPTS = 3
#: Bound of every CDP command the watchdog sends.
COMMAND_TIMEOUT_S = 2.0


class PageState(Enum):
    RESPONSIVE = "responsive"  # answered at once
    RECOVERED = "recovered"  # was busy; the running script was terminated
    DROPPED = "dropped"  # stayed busy; the page was closed


class PageWatchdog:
    """One page's probe and brake; create it once per run page, use it on the run's loop."""

    def __init__(self, context: BrowserContext, page: Page) -> None:
        self._context = context
        self._page = page
        self._session: CDPSession | None = None
        #: Told each time the page asks to open another (see :meth:`count_opens`).
        self._on_open: Callable[[], None] | None = None
        self._opens_watched = False

    def count_opens(self, on_open: Callable[[], None]) -> None:
        """Call ``on_open`` the moment the page asks for a new page (``window.open``, a
        ``target=_blank`` link): DevTools' ``Page.windowOpen`` comes before the click returns,
        Playwright's ``page`` event only once the new page is set up, which may be after the
        next step began. Subscribed when the session is attached (:meth:`attach`)."""
        self._on_open = on_open

    async def attach(self) -> None:
        """Open the CDP session now, while the page is idle.

        A session attached while the main thread is busy is only set up in the renderer once the
        thread is free, so its terminateExecution would never be delivered; a session attached
        beforehand is served from the renderer's IO thread and interrupts the running script.
        """
        try:
            session = await self._cdp()
            if self._on_open is not None and not self._opens_watched:
                self._opens_watched = True
                on_open = self._on_open
                session.on("Page.windowOpen", lambda _event: on_open())
                await asyncio.wait_for(session.send("Page.enable"), COMMAND_TIMEOUT_S)
        except Exception as exc:
            log.warning("page watchdog not attached", error=f"{type(exc).__name__}: {exc}"[:200])

    async def _cdp(self) -> CDPSession:
        if self._session is None:
            self._session = await asyncio.wait_for(
                self._context.new_cdp_session(self._page), COMMAND_TIMEOUT_S
            )
        return self._session

    async def responsive(self, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
        """Whether the page's main thread runs a trivial script within ``timeout_s``.

        Any answer counts, an error too (a page between documents has no context to run in):
        only silence means a busy main thread.
        """
        if self._page.is_closed():
            return True
        try:
            session = await self._cdp()
            await asyncio.wait_for(
                session.send("Runtime.evaluate", {"expression": "0", "returnByValue": True}), timeout_s
            )
        except TimeoutError:
            return False
        except Exception:
            return True
        return True

    async def unblock(self, *, stop_loading: bool = False) -> PageState:
        """Make the page answer again: stop a pending navigation, terminate what runs in the
        page, else close it. ``stop_loading`` stops loading first (before a failure snapshot,
        which would stop it anyway), saving a probe's wait on a page that is merely slow."""
        if not stop_loading and await self.responsive():
            return PageState.RESPONSIVE
        # A navigation that has not committed yet holds commands too (DevTools queues them until
        # the new document exists): that page is slow, not stuck. Stopping it is browser-side.
        await self._stop_loading()
        if await self.responsive():
            return PageState.RESPONSIVE if stop_loading else PageState.RECOVERED
        for attempt in range(1, TERMINATE_ATTEMPTS + 1):
            try:
                session = await self._cdp()
                await asyncio.wait_for(session.send("Runtime.terminateExecution"), COMMAND_TIMEOUT_S)
            except Exception as exc:
                log.warning("could not terminate the page's script", error=f"{type(exc).__name__}: {exc}"[:200])
                break
            if await self.responsive():
                log.info("terminated a runaway page script", attempts=attempt)
                return PageState.RECOVERED
        log.warning("page stays unresponsive; closing it", url=self._page.url[:200])
        await self.drop()
        return PageState.DROPPED

    async def _stop_loading(self) -> None:
        try:
            session = await self._cdp()
            await asyncio.wait_for(session.send("Page.stopLoading"), COMMAND_TIMEOUT_S)
        except Exception as exc:
            log.debug("could not stop loading", error=f"{type(exc).__name__}: {exc}"[:200])

    async def drop(self) -> None:
        """Close the page (its renderer goes with it); the context and browser stay."""
        try:
            await asyncio.wait_for(self._page.close(), COMMAND_TIMEOUT_S * 2)
        except Exception as exc:
            log.warning("could not close the unresponsive page", error=str(exc)[:200])

    async def detach(self) -> None:
        """Release the CDP session (bounded: a busy page must not hold the run's end)."""
        session, self._session = self._session, None
        if session is None:
            return
        try:
            await asyncio.wait_for(session.detach(), COMMAND_TIMEOUT_S)
        except Exception as exc:
            log.debug("CDP session not detached", error=str(exc)[:200])
