"""When a browser retires (contexts served, age, RSS of its real process tree) and closing it quietly."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserq.browsers import EventLoopThread
from browserq.browsers.api import async_playwright
from browserq.browsers.instance import Instance, close_browser, close_quietly, retire_reason
from browserq.browsers.launcher import find_browser_pid, launch_chromium
from tests.conftest import make_settings


class Launched:
    """One real Chromium wrapped as the pool's Instance."""

    def __init__(self, tmp_path: Path) -> None:
        self.loop = EventLoopThread().start()
        self.playwright = self.run(async_playwright().start())
        browser, marker = self.run(launch_chromium(self.playwright, make_settings(tmp_path)))
        self.instance = Instance(browser, marker, find_browser_pid(marker))

    def run(self, coro: Any) -> Any:
        return self.loop.run(coro, timeout=60)


@pytest.fixture
def launched(tmp_path: Path) -> Iterator[Launched]:
    own = Launched(tmp_path)
    yield own
    own.run(close_browser(own.instance))
    own.run(own.playwright.stop())
    own.loop.stop()


def test_a_fresh_browser_does_not_retire(launched: Launched, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, browser_max_contexts=5, browser_max_age_s=3600, browser_max_rss_mb=100_000)
    assert retire_reason(launched.instance, settings, check_rss=True) is None


def test_each_limit_gives_its_reason(launched: Launched, tmp_path: Path) -> None:
    instance = launched.instance
    instance.contexts_created = 5
    assert retire_reason(instance, make_settings(tmp_path, browser_max_contexts=5), check_rss=False) == (
        "served 5 contexts"
    )
    instance.contexts_created, instance.launched_at = 0, time.monotonic() - 120
    assert retire_reason(instance, make_settings(tmp_path, browser_max_age_s=60), check_rss=False) == "120 s old"
    small = make_settings(tmp_path, browser_max_rss_mb=1)  # any real Chromium tree is larger
    assert retire_reason(instance, small, check_rss=False) is None  # RSS is read only when asked
    assert (retire_reason(instance, small, check_rss=True) or "").startswith("process tree RSS")


def test_closing_never_raises(launched: Launched) -> None:
    instance = launched.instance
    context = launched.run(instance.browser.new_context())
    launched.run(close_quietly(context))
    launched.run(close_quietly(context))  # closed twice: still quiet
    assert instance.guard_of() is instance.guard_of()  # one guard per browser, made on first use
    launched.run(close_browser(instance))
    launched.run(close_browser(instance))
    assert not instance.browser.is_connected()
