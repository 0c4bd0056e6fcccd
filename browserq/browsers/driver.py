"""The Playwright driver (a node process between us and Chromium): start it, stop it, notice it died.

The driver can die on its own (out of memory, killed); then ``Browser.is_connected()`` still says
True while every call fails, so the pool asks :func:`driver_closed` and restarts driver and browser
together. A driver that will not start is a :class:`BrowserLaunchFailed`, like a browser that will
not start: the worker cannot get a browser either way.

A driver also grows over its life (its node heap keeps what it learnt of every context it served,
~15 KB a run in bench/soak_memory.py) and gives it back only when it exits, so :class:`Drivers`
replaces it as the pool replaces browsers: a new driver for the next launch, the old one stopped
when the last browser it launched closes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
from pathlib import Path

import structlog
from playwright.async_api import Playwright

from browserq.browsers import api
from browserq.browsers.errors import BrowserLaunchFailed
from browserq.browsers.launcher import browser_process_tree

log = structlog.get_logger(__name__)

CLOSE_TIMEOUT_S = 10.0
#: Starting a driver spawns node and loads Playwright: give it longer than a close.
START_TIMEOUT_S = CLOSE_TIMEOUT_S * 3


def driver_closed(playwright: Playwright | None) -> bool:
    """Whether the Playwright driver's connection is gone (its node process exited or was killed).

    Playwright has no public signal for it: ``Browser.is_connected()`` stays True because the
    browser's pipe is the driver's, not ours. The connection records why it closed.
    """
    connection = getattr(getattr(playwright, "_impl_obj", None), "_connection", None)
    return getattr(connection, "_closed_error", None) is not None


def use_compile_cache() -> None:
    """Let node keep the driver's compiled JavaScript on disk (``NODE_COMPILE_CACHE``, Node >= 22.1,
    the directory node itself defaults to): every driver start after the first then costs about a
    quarter less CPU (0.38-0.45 CPU-s without, 0.30-0.32 with, 20 starts each, 2026-12-07) — each
    worker start and each driver replacement. A ``NODE_COMPILE_CACHE`` already set is kept, and
    ``NODE_DISABLE_COMPILE_CACHE=1`` turns it off; a node without the feature ignores it."""
    os.environ.setdefault("NODE_COMPILE_CACHE", str(Path(tempfile.gettempdir()) / "node-compile-cache"))


async def start_driver(*, again: bool = False) -> Playwright:
    """A started Playwright driver; ``again`` for a replacement (then bounded by a timeout)."""
    use_compile_cache()
    try:
        if again:
            return await asyncio.wait_for(api.async_playwright().start(), START_TIMEOUT_S)
        return await api.async_playwright().start()
    except Exception as exc:
        which = f"a new {api.NAME} driver" if again else f"the {api.NAME} driver"
        raise BrowserLaunchFailed(f"could not start {which}: {exc}") from exc


async def stop_driver(playwright: Playwright, *, quiet: bool = False) -> None:
    """Stop a driver, never raising (a dead one may not answer)."""
    try:
        await asyncio.wait_for(playwright.stop(), CLOSE_TIMEOUT_S)
    except Exception as exc:
        if quiet:
            log.debug("old driver stop failed", error=str(exc)[:200])
        else:
            log.warning("playwright stop failed", error=str(exc))


class Drivers:
    """The pool's Playwright drivers: the current one launches new browsers; a replaced one lives
    on until the last browser it launched is closed (its draining runs never notice).

    ``max_browsers`` (``BROWSERQ_DRIVER_MAX_BROWSERS``): browsers one driver launches before the
    next launch gets a new driver; 0 keeps one driver for the pool's life.
    """

    def __init__(self, max_browsers: int) -> None:
        self._max_browsers = max_browsers
        self.current: Playwright | None = None
        self._launched = 0  # browsers the current driver launched
        self._open: dict[int, tuple[Playwright, int]] = {}  # id(driver) -> (driver, browsers open)
        #: Drivers replaced because they had launched their share (not because they died).
        self.replacements = 0

    async def start(self) -> None:
        if self.current is None:
            self.current = await start_driver()
            self._launched = 0

    @property
    def lost(self) -> bool:
        """The current driver's process is gone: every browser it launched is unreachable."""
        return self.current is not None and driver_closed(self.current)

    async def for_launch(self) -> Playwright:
        """The driver the next browser is launched on: a fresh one once the current one has
        launched its share."""
        if self.current is None:
            raise RuntimeError("BrowserPool.start() was not called")
        if self._max_browsers and self._launched >= self._max_browsers:
            old, self.current = self.current, await start_driver(again=True)
            self._launched = 0
            self.replacements += 1
            log.info("playwright driver replaced", browsers_of_old=self._browsers_open(old))
            await self._stop_if_unused(old)
        return self.current

    def launched(self, driver: Playwright) -> None:
        """A browser was launched on ``driver``."""
        if driver is self.current:
            self._launched += 1
        _, count = self._open.get(id(driver), (driver, 0))
        self._open[id(driver)] = (driver, count + 1)

    async def closed(self, driver: Playwright | None) -> None:
        """A browser launched on ``driver`` was closed; a replaced driver with none left stops."""
        if driver is None or id(driver) not in self._open:
            return
        _, count = self._open[id(driver)]
        self._open[id(driver)] = (driver, max(count - 1, 0))
        await self._stop_if_unused(driver)

    async def restart(self) -> None:
        """A new current driver (the old one died or could not launch): its browsers are gone."""
        old, self.current = self.current, None
        if old is not None:
            self._open.pop(id(old), None)
            await stop_driver(old, quiet=True)
        self.current = await start_driver(again=True)  # BrowserLaunchFailed (a ConfigError)
        self._launched = 0

    async def stop(self) -> None:
        """Stop every driver, the current one and those still serving a draining browser."""
        drivers = [driver for driver, _ in self._open.values() if driver is not self.current]
        if self.current is not None:
            drivers.append(self.current)
        self._open.clear()
        self.current = None
        for driver in drivers:
            await stop_driver(driver)

    def _browsers_open(self, driver: Playwright) -> int:
        return self._open.get(id(driver), (driver, 0))[1]

    async def _stop_if_unused(self, driver: Playwright) -> None:
        if driver is not self.current and self._browsers_open(driver) == 0:
            self._open.pop(id(driver), None)
            await stop_driver(driver, quiet=True)
            log.info("replaced playwright driver stopped")


def kill_tree(marker: str) -> None:
    """SIGKILL a browser instance's processes (its driver is gone, nobody else can close it)."""
    for pid in browser_process_tree(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
