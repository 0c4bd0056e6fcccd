"""Leases on the database's clock, at the store level: a process whose clock libfaketime moves
10 minutes (a skewed worker host) and this one agree on which leases are live
(tests/chaos/test_clock_skew.py does the same with real workers).

PostgreSQL only: SQLite runs inside each process, so its ``'now'`` is that process's clock, which
libfaketime skews too. That is no gap in practice: a SQLite store serves one host, whose
processes share one clock; the store still reads it from SQLite, like every other time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from browserq.store import LeaseBusy, Store
from tests.store.helpers import new_run
from tests.support import REPO
from tests.support.skewed import LIBFAKETIME

#: In the skewed process: ``lease RUN`` takes the run's lease for 60 s; ``stuck`` prints the ids
#: stuck_runs lists (expired leases) on that process's clock.
SCRIPT = """
import sys
from browserq.store import Store
store = Store(sys.argv[1])
if sys.argv[2] == "lease":
    store.leases.acquire_lease(sys.argv[3], owner="skewed-host:1", ttl_s=60)
else:
    print(",".join(r.id for r in store.leases.stuck_runs(queued_older_than_s=3600)))
"""


def skewed(skew: str, *args: str) -> str:
    assert Path(LIBFAKETIME).exists(), "libfaketime is missing: apt-get install faketime"
    env = {
        **os.environ,
        "LD_PRELOAD": LIBFAKETIME,
        "FAKETIME": skew,
        "PYTHONPATH": str(REPO),
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


@pytest.fixture
def backend() -> str:
    return "postgresql"


def test_a_lease_taken_on_a_slow_clock_is_live_for_everyone(store: Store, store_url: str) -> None:
    run_id = new_run(store)
    skewed("-10m", store_url, "lease", run_id)
    assert run_id not in [r.id for r in store.leases.stuck_runs(queued_older_than_s=3600)]
    with pytest.raises(
        LeaseBusy
    ):  # nobody takes it over: it has ~60 s left on the database's clock
        store.leases.acquire_lease(run_id, owner="normal-host:1", ttl_s=60)


def test_a_process_on_a_fast_clock_sees_no_live_lease_as_expired(
    store: Store, store_url: str
) -> None:
    run_id = new_run(store)
    store.leases.acquire_lease(run_id, owner="normal-host:1", ttl_s=60)
    assert run_id not in skewed("+10m", store_url, "stuck").split(",")
