"""One Chromium launched by browserq's own launcher, driven on a browserq loop thread.

For tests that need a bare browser (no Runtime, no pool) but browserq's executable and flags:
``on_page`` runs a coroutine against a page of a fresh context and closes the context after it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Playwright

from browserq.browsers import EventLoopThread
from browserq.browsers.api import async_playwright
from browserq.browsers.launcher import launch_chromium
from tests.conftest import make_settings


class LaunchedChromium:
    """A Chromium launched by browserq's launcher, driven on a browserq loop thread."""

    def __init__(self, tmp_path: Path) -> None:
        self.loop = EventLoopThread().start()
        self.playwright: Playwright = self.run(async_playwright().start())
        self.browser: Browser
        self.browser, _ = self.run(launch_chromium(self.playwright, make_settings(tmp_path)))

    def run(self, coro: Any, timeout: float = 60) -> Any:
        return self.loop.run(coro, timeout=timeout)

    def on_page(self, act: Any) -> Any:
        """``act(page)`` in a fresh context, closed afterwards."""

        async def go() -> Any:
            context = await self.browser.new_context()
            try:
                return await act(await context.new_page())
            finally:
                await context.close()

        return self.run(go())

    def close(self) -> None:
        self.run(self.browser.close())
        self.run(self.playwright.stop())
        self.loop.stop()


def chromium_fixture(kind: type[LaunchedChromium] = LaunchedChromium) -> Any:
    """A module-scoped ``chromium`` fixture of ``kind``."""

    @pytest.fixture(scope="module")
    def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LaunchedChromium]:
        browser = kind(tmp_path_factory.mktemp("chromium"))
        yield browser
        browser.close()

    return chromium
