"""The Playwright driver: noticing that its node process died, and stopping it whatever its state."""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
import time
from pathlib import Path

import pytest

from browserq.browsers import EventLoopThread
from browserq.browsers.driver import driver_closed, start_driver, stop_driver, use_compile_cache
from browserq.browsers.launcher import _iter_cmdlines, _parent_pid


def _driver_children() -> set[int]:
    """Playwright driver (node) processes started by this test process (the launcher's /proc walk)."""
    return {
        pid for pid, cmdline in _iter_cmdlines() if b"playwright/driver" in cmdline and _parent_pid(pid) == os.getpid()
    }


def test_a_killed_driver_is_noticed_and_still_stops_quietly() -> None:
    loop = EventLoopThread().start()
    try:
        before = _driver_children()
        playwright = loop.run(start_driver(), timeout=60)
        (pid,) = _driver_children() - before
        assert not driver_closed(playwright)
        os.kill(pid, signal.SIGKILL)  # what the kernel's OOM killer does
        deadline = time.monotonic() + 20
        while not driver_closed(playwright) and time.monotonic() < deadline:
            loop.run(_tick(), timeout=5)  # the connection learns on its own loop
        assert driver_closed(playwright)
        loop.run(stop_driver(playwright, quiet=True), timeout=30)  # never raises
        assert driver_closed(None) is False  # no driver at all is not a lost driver
    finally:
        loop.stop()


def test_a_replacement_driver_starts_within_its_bound() -> None:
    loop = EventLoopThread().start()
    try:
        playwright = loop.run(start_driver(again=True), timeout=60)
        assert not driver_closed(playwright)
        loop.run(stop_driver(playwright), timeout=30)
    finally:
        loop.stop()


def test_the_driver_keeps_its_compiled_code_on_disk_where_node_is_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NODE_COMPILE_CACHE reaches the driver's node (a user's own choice is kept), and without one
    it is node's own default directory."""
    cache = tmp_path / "compiled"
    monkeypatch.setenv("NODE_COMPILE_CACHE", str(cache))
    loop = EventLoopThread().start()
    try:
        loop.run(stop_driver(loop.run(start_driver(), timeout=60)), timeout=30)
    finally:
        loop.stop()
    assert [path for path in cache.rglob("*") if path.is_file()], "node wrote no compile cache"
    monkeypatch.delenv("NODE_COMPILE_CACHE")
    use_compile_cache()
    assert os.environ["NODE_COMPILE_CACHE"] == str(Path(tempfile.gettempdir()) / "node-compile-cache")


async def _tick() -> None:
    await asyncio.sleep(0.1)
