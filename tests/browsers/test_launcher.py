"""Launching Chromium: a real launch is findable in /proc, and a launch that fails says what to fix.

Every failure is a BrowserLaunchFailed: a BrowserUnusable (policy INFRASTRUCTURE) that is also a
ConfigError, which is what a worker whose browser does not start has always caught.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from browserq.browsers import BrowserPool, EventLoopThread
from browserq.browsers.errors import BrowserLaunchFailed, BrowserUnusable, launch_failure
from browserq.browsers.launcher import (
    MARKER_SWITCH,
    browser_process_tree,
    chromium_pids_with_marker,
    find_browser_pid,
    launch_chromium,
    rss_bytes,
)
from browserq.errors import ConfigError, ErrorClass
from tests.browsers.conftest import Driver
from tests.conftest import make_settings

pytestmark = pytest.mark.full_chromium  # BROWSERQ_CHROMIUM_PATH and Chromium's launch errors


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_a_launched_browser_is_found_by_its_marker(driver: Driver, tmp_path: Path) -> None:
    browser, marker = driver.run(launch_chromium(driver.playwright, make_settings(tmp_path)))
    try:
        pid = find_browser_pid(marker)
        assert pid is not None and f"{MARKER_SWITCH}={marker}".encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
        tree = browser_process_tree(marker)
        assert tree[0] == pid and len(tree) > 1  # renderers, GPU, utility processes
        assert pid in chromium_pids_with_marker(marker) and rss_bytes(tree) > 0
    finally:
        driver.run(browser.close())
    assert find_browser_pid(marker) is None


def test_a_missing_executable_names_the_setting_and_the_install_command(driver: Driver, tmp_path: Path) -> None:
    failure = driver.launch_error(tmp_path, tmp_path / "no-chromium")
    message = str(failure)
    assert "BROWSERQ_CHROMIUM_PATH" in message and "playwright install chromium" in message
    assert isinstance(failure, ConfigError) and isinstance(failure, BrowserUnusable)
    assert failure.policy is ErrorClass.INFRASTRUCTURE


def test_playwrights_own_missing_executable_error_is_translated(driver: Driver, tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    with pytest.raises(Exception) as caught:  # a real launch of a path that does not exist
        driver.run(driver.playwright.chromium.launch(executable_path=str(missing)))
    message = str(launch_failure(caught.value, str(missing)))
    assert str(missing) in message
    assert "BROWSERQ_CHROMIUM_PATH" in message and "playwright install chromium" in message
    fallback = str(launch_failure(caught.value, None))  # Playwright's own build is missing
    assert fallback.startswith("no Chromium found") and "playwright install chromium" in fallback


def test_a_browser_that_exits_at_once_reports_its_stderr(driver: Driver, tmp_path: Path) -> None:
    crashing = _script(
        tmp_path / "chromium",
        'echo "fatal: libnss3.so: cannot open shared object file" >&2\necho "second line" >&2\nexit 3',
    )
    message = str(driver.launch_error(tmp_path, crashing))
    assert message.startswith(f"could not launch Chromium ({crashing})")
    assert "exit code 3" in message
    assert "fatal: libnss3.so: cannot open shared object file | second line" in message
    assert "--disable-field-trial-config" not in message  # the command line is not the news


def test_a_silent_crash_says_it_wrote_nothing(driver: Driver, tmp_path: Path) -> None:
    message = str(driver.launch_error(tmp_path, _script(tmp_path / "chromium", "exit 1")))
    assert "exited as soon as it started (exit code 1) and wrote nothing to stderr" in message


def test_a_file_that_cannot_be_executed_says_permission_denied(driver: Driver, tmp_path: Path) -> None:
    plain = tmp_path / "chromium"
    plain.write_text("not a program")
    message = str(driver.launch_error(tmp_path, plain))
    assert "permission denied" in message and "BROWSERQ_CHROMIUM_PATH" in message


def test_a_pool_whose_first_launch_fails_raises_the_translated_error(tmp_path: Path) -> None:
    loop = EventLoopThread().start()
    pool = BrowserPool(make_settings(tmp_path, chromium_path=str(_script(tmp_path / "chromium", "exit 7"))))
    try:
        with pytest.raises(ConfigError) as caught:  # what Runtime.start's callers catch
            loop.run(pool.start(), timeout=60)
        assert isinstance(caught.value, BrowserLaunchFailed) and "exit code 7" in str(caught.value)
        assert pool.unusable is None  # a first start is reported, not given up on: the worker retries
    finally:
        loop.run(pool.stop(), timeout=30)
        loop.stop()
