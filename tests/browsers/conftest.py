"""A Playwright driver on browserq's loop thread, shared by the launch tests of this folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Playwright

from browserq.browsers import EventLoopThread
from browserq.browsers.api import async_playwright
from browserq.browsers.errors import BrowserLaunchFailed
from browserq.browsers.launcher import launch_chromium
from tests.conftest import make_settings


class Driver:
    """A Playwright driver on browserq's loop thread."""

    def __init__(self) -> None:
        self.loop = EventLoopThread().start()
        self.playwright: Playwright = self.run(async_playwright().start())

    def run(self, coro: Any, timeout: float = 60) -> Any:
        return self.loop.run(coro, timeout=timeout)

    def launch_error(self, tmp_path: Path, executable: Path) -> BrowserLaunchFailed:
        """What launch_chromium raises for ``executable`` (it must fail)."""
        settings = make_settings(tmp_path, chromium_path=str(executable))
        with pytest.raises(BrowserLaunchFailed) as caught:
            self.run(launch_chromium(self.playwright, settings))
        return caught.value


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    own = Driver()
    yield own
    own.run(own.playwright.stop())
    own.loop.stop()
