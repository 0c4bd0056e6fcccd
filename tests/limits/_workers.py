"""Code run in separate processes by the limits tests (importable by multiprocessing's spawn)."""

from __future__ import annotations

import asyncio
import sys
import time


def hammer_try_acquire(
    redis_url: str, prefix: str, rate: str, host: str, start_at: float, seconds: float, out
) -> None:  # type: ignore[no-untyped-def]
    """Call try_acquire back to back from ``start_at`` (wall clock) for ``seconds``; report counts."""
    from browserq.limits import RateLimiter

    limiter = RateLimiter(redis_url, per_domain={host: rate}, prefix=prefix)
    limiter.try_acquire("warm.up.invalid")  # connect (no rule for it: does not touch Redis)
    limiter._handle.sync.ping()
    while time.time() < start_at:
        time.sleep(0.001)
    began = time.time()
    taken = calls = 0
    while time.time() - began < seconds:
        calls += 1
        if limiter.try_acquire(host) == 0.0:
            taken += 1
        time.sleep(0.002)
    out.put((began, time.time(), taken, calls))


def hold_slot_forever(redis_url: str, prefix: str, tenant: str, run_id: str, ttl_s: float) -> None:
    """Take a tenant slot, say so on stdout, then hang until killed (a worker that dies mid-run)."""
    from browserq.limits import TenantLimiter

    async def main() -> None:
        limiter = TenantLimiter(redis_url, {tenant: 1}, ttl_s=ttl_s, prefix=prefix)
        async with limiter.slot(tenant, run_id, wait_s=5):
            print("held", flush=True)
            await asyncio.sleep(3600)

    asyncio.run(main())


if __name__ == "__main__":
    hold_slot_forever(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
