"""This process's UTC wall clock, kept from stepping back.

Rows are listed newest first by the ``created_at`` a process stamps on them. A host's clock can be
stepped back a little by NTP (a VM after a pause, chrony correcting drift); two runs enqueued
across such a step would then list in the wrong order, and a step would appear to end before it
began. So within one process a timestamp is never earlier than the previous one, and two calls
never return the same instant: an earlier reading becomes the previous one plus a microsecond.

Only a small step back is absorbed (up to :data:`MAX_ABSORBED_STEP_BACK`): a large one is a real
correction of a clock that was wrong, and holding every timestamp at the old time until the clock
caught up would make them all false. Across processes nothing is promised; the database's clock
(:mod:`browserq.store.clock`) is what leases and heartbeats compare against.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

MAX_ABSORBED_STEP_BACK = timedelta(seconds=5)
_TICK = timedelta(microseconds=1)


def _system_utc() -> datetime:
    return datetime.now(UTC)


class ForwardClock:
    """Aware UTC datetimes that increase strictly across calls, from any thread."""

    def __init__(self, source: Callable[[], datetime] = _system_utc) -> None:
        #: Where readings come from (the system clock; a test hands a scripted one).
        self.source = source
        self._last: datetime | None = None
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            now = self.source()
            last = self._last
            if last is not None and last - MAX_ABSORBED_STEP_BACK < now <= last:
                now = last + _TICK
            self._last = now
            return now


__all__ = ["MAX_ABSORBED_STEP_BACK", "ForwardClock"]
