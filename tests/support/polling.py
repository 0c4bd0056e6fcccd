"""Waiting for something that happens in another process or thread: poll, with a deadline, and a
failure message that says what was awaited (never a bare ``assert`` after a ``sleep``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T], timeout_s: float = 60.0, what: str = "the condition", interval_s: float = 0.1
) -> T:
    """Call ``predicate`` until it returns something truthy and return that; fail with
    "timed out after N s waiting for <what>" once ``timeout_s`` has passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)


def poll(fetch: Callable[[], T], done: Callable[[T], bool], timeout_s: float, interval_s: float = 0.5) -> T:
    """Call ``fetch`` until ``done(value)`` or the deadline; return the last value either way
    (for callers that report what they saw rather than fail here)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = fetch()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(interval_s)
