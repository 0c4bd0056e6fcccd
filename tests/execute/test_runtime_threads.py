"""What the K runs of a ``--pool threads`` worker share: one loop, whose blocking calls (journal
writes through ``asyncio.to_thread``) must not queue behind each other."""

from __future__ import annotations

import asyncio
import threading

from browserq.execute.runtime import IO_THREADS, Runtime


def test_the_loop_runs_many_blocking_calls_at_once(sqlite_runtime: Runtime) -> None:
    """16 calls that each wait for all 16 to have started: they pass only if none is queued
    (asyncio's default executor has cpu_count + 4 threads: 6 on a 2-core host)."""
    parties = 16
    assert parties <= IO_THREADS
    barrier = threading.Barrier(parties, timeout=20)

    async def together() -> list[int]:
        return await asyncio.gather(*(asyncio.to_thread(barrier.wait) for _ in range(parties)))

    assert sorted(sqlite_runtime.loop.run(together(), timeout=60)) == list(range(parties))
