"""``python -m tests.support.skewed <celery args>``: a Celery worker whose clock libfaketime skews.

Started with ``LD_PRELOAD=<libfaketime>`` and ``FAKETIME=+2m`` (say), this process (and the prefork
children it forks, which keep the loaded library) sees the skewed time. Its own children do not:
it drops ``LD_PRELOAD`` from its environment first, because Chromium (and Playwright's driver)
hang under libfaketime. ``FAKETIME`` stays set, since libfaketime re-reads it.

Only the wall clock is skewed (``FAKETIME_DONT_FAKE_MONOTONIC=1``, set by the caller): a faked
monotonic clock makes every timed thread wait hang. Under that setting libfaketime's
``clock_nanosleep`` refuses Python's ``time.sleep`` (EINVAL), so sleeps go through ``select``.
"""

from __future__ import annotations

import os
import runpy
import select
import sys
import time

#: Where Debian's ``faketime`` package puts the library (scripts/bootstrap.sh installs it).
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

if __name__ == "__main__":
    os.environ.pop("LD_PRELOAD", None)
    time.sleep = lambda seconds: select.select([], [], [], max(0.0, seconds)) and None  # type: ignore[assignment]
    sys.argv = ["celery", *sys.argv[1:]]
    runpy.run_module("celery", run_name="__main__", alter_sys=True)
