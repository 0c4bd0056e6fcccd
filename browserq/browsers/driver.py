"""The Playwright driver (a node process between us and Chromium): start it, stop it, notice it died.

The driver can die on its own (out of memory, killed); then ``Browser.is_connected()`` still says
True while every call fails, so the pool asks :func:`driver_closed` and restarts driver and browser
together. A driver that will not start is a :class:`BrowserLaunchFailed`, like a browser that will
not start: the worker cannot get a browser either way.
"""

from __future__ import annotations

import asyncio
import os
import signal

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


async def start_driver(*, again: bool = False) -> Playwright:
    """A started Playwright driver; ``again`` for a replacement (then bounded by a timeout)."""
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


def kill_tree(marker: str) -> None:
    """SIGKILL a browser instance's processes (its driver is gone, nobody else can close it)."""
    for pid in browser_process_tree(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
