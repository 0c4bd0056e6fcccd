"""One launched Chromium as the pool sees it: what it serves, when it retires, how it is closed.

Recycling lives here: a browser retires after ``BROWSERQ_BROWSER_MAX_CONTEXTS`` contexts, after
``BROWSERQ_BROWSER_MAX_AGE_S``, or when the RSS of its process tree passes
``BROWSERQ_BROWSER_MAX_RSS_MB``; the pool then drains it (closes it after its last run's context).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import structlog
from playwright.async_api import Browser, BrowserContext, Playwright

from browserq import engines
from browserq.browsers.domains import DomainGuard
from browserq.browsers.driver import CLOSE_TIMEOUT_S
from browserq.browsers.launcher import browser_process_tree, rss_bytes
from browserq.settings import Settings

log = structlog.get_logger(__name__)

#: The RSS of the process tree is read every this many acquisitions (it costs a /proc walk).
RSS_CHECK_EVERY = 10


@dataclass
class Instance:
    """One launched Chromium and what it is serving."""

    browser: Browser
    marker: str
    pid: int | None
    launched_at: float = field(default_factory=time.monotonic)
    contexts_created: int = 0
    in_use: set[BrowserContext] = field(default_factory=set)
    host: Any = None  # stealth.HostInfo: what this browser really reports (probed once)
    retiring: bool = False
    retire_reason: str = ""
    guard: DomainGuard | None = None  # allowed_domains, enforced in this browser (made on first use)
    driver: Playwright | None = None  # the Playwright driver that launched it (browsers.driver.Drivers)
    engine: str = engines.CHROMIUM  # BROWSERQ_BROWSER it was launched as

    def guard_of(self) -> DomainGuard:
        """This browser's document guard, made on first use."""
        if self.guard is None:
            self.guard = DomainGuard(self.browser, has_settings_page=engines.has_settings_page(self.engine))
        return self.guard


def retire_reason(instance: Instance, settings: Settings, *, check_rss: bool) -> str | None:
    """Why ``instance`` should take no more runs (None: it may). ``check_rss`` walks /proc."""
    if settings.browser_max_contexts and instance.contexts_created >= settings.browser_max_contexts:
        return f"served {instance.contexts_created} contexts"
    age = time.monotonic() - instance.launched_at
    if settings.browser_max_age_s and age >= settings.browser_max_age_s:
        return f"{age:.0f} s old"
    if settings.browser_max_rss_mb and check_rss:
        rss_mb = rss_bytes(browser_process_tree(instance.marker)) / 2**20
        if rss_mb >= settings.browser_max_rss_mb:
            return f"process tree RSS {rss_mb:.0f} MB"
    return None


async def close_quietly(context: BrowserContext) -> None:
    """Close a context, never raising (it may be closed or its browser gone)."""
    try:
        await asyncio.wait_for(context.close(), CLOSE_TIMEOUT_S)
    except Exception as exc:
        log.debug("context close failed", error=str(exc))


async def close_browser(instance: Instance) -> None:
    """Close a browser, never raising."""
    try:
        await asyncio.wait_for(instance.browser.close(), CLOSE_TIMEOUT_S)
    except Exception as exc:
        log.debug("browser close failed", error=str(exc))
