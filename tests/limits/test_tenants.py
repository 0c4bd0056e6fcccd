"""Per-tenant concurrency caps across limiter instances (workers), on a real Redis."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from browserq.errors import BrowserqError, ConfigError
from browserq.limits import TenantBusy, TenantLimiter
from browserq.settings import load_settings

WORKERS = Path(__file__).with_name("_workers.py")
REPO = Path(__file__).resolve().parents[2]


def test_settings_tenant_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSERQ_TENANT_CAPS", '{"acme": 2, "*": 5}')
    settings = load_settings()
    limiter = TenantLimiter.from_settings(settings)
    assert limiter.caps == {"acme": 2} and limiter.default_cap == 5
    assert limiter.ttl_s == settings.tenant_slot_ttl_s
    assert (
        limiter.cap_for("acme") == 2
        and limiter.cap_for("other") == 5
        and limiter.cap_for(None) is None
    )
    monkeypatch.setenv("BROWSERQ_TENANT_CAPS", "acme=lots")
    with pytest.raises(ConfigError, match="BROWSERQ_TENANT_CAPS"):
        load_settings()


def test_cap_holds_across_two_workers(redis_url: str, prefix: str) -> None:
    """Two limiter instances (threads with their own loops), 8 runs of one tenant, cap 2."""
    cap, per_worker = 2, 4
    inside = 0
    most = 0
    entered: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        limiter = TenantLimiter(redis_url, {"acme": cap}, ttl_s=2, poll_s=0.05, prefix=prefix)

        async def run(run_id: str) -> None:
            nonlocal inside, most
            async with limiter.slot("acme", run_id, wait_s=30) as slot:
                assert slot.cap == cap
                with lock:
                    inside += 1
                    most = max(most, inside)
                    entered.append(run_id)
                await asyncio.sleep(0.15)
                with lock:
                    inside -= 1

        async def main() -> None:
            await asyncio.gather(*(run(f"{name}-{i}") for i in range(per_worker)))
            await limiter.aclose()

        try:
            asyncio.run(main())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("w1", "w2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert len(entered) == 2 * per_worker
    assert most == cap  # never more than the cap, and the cap was used
    assert (
        TenantLimiter(redis_url, {"acme": cap}, prefix=prefix).holders("acme") == []
    )  # all released


def test_busy_after_wait_and_other_tenants_unaffected(redis_url: str, prefix: str) -> None:
    one = TenantLimiter(redis_url, {"acme": 1, "paused": 0}, ttl_s=5, prefix=prefix)
    two = TenantLimiter(redis_url, {"acme": 1, "paused": 0}, ttl_s=5, prefix=prefix)

    async def main() -> TenantBusy:
        async with one.slot("acme", "run-1", wait_s=1):
            with pytest.raises(TenantBusy) as info:
                async with two.slot("acme", "run-2", wait_s=0.3):
                    pytest.fail("entered a full tenant")
            async with two.slot("globex", "run-3", wait_s=0):  # no cap: unlimited
                pass
            async with two.slot(None, "run-4", wait_s=0):  # no tenant at all
                pass
            # the same run (redelivered) gets its own slot back instead of waiting for itself
            async with two.slot("acme", "run-1", wait_s=0):
                pass
        async with two.slot("acme", "run-2", wait_s=0):  # freed on exit
            pass
        with pytest.raises(TenantBusy, match="cap of 0"):
            async with two.slot("paused", "run-5", wait_s=10):
                pass
        await one.aclose()
        await two.aclose()
        return info.value

    error = asyncio.run(main())
    assert isinstance(error, BrowserqError)
    assert error.tenant == "acme" and error.cap == 1 and error.waited_s >= 0.3
    assert "tenant 'acme' already has 1 run(s) in progress" in str(error)
    assert error.retry_after_s is not None and 0 < error.retry_after_s <= 5


def test_slot_released_when_the_body_raises(redis_url: str, prefix: str) -> None:
    limiter = TenantLimiter(redis_url, {"acme": 1}, ttl_s=30, prefix=prefix)

    async def main() -> None:
        with pytest.raises(RuntimeError):
            async with limiter.slot("acme", "run-1", wait_s=1):
                raise RuntimeError("step blew up")
        async with limiter.slot("acme", "run-2", wait_s=0):
            pass
        await limiter.aclose()

    asyncio.run(main())


def test_held_slot_is_renewed_past_its_ttl(redis_url: str, prefix: str) -> None:
    holder = TenantLimiter(redis_url, {"acme": 1}, ttl_s=0.6, prefix=prefix)
    other = TenantLimiter(redis_url, {"acme": 1}, ttl_s=0.6, prefix=prefix)

    async def main() -> None:
        async with holder.slot("acme", "long-run", wait_s=1) as slot:
            await asyncio.sleep(1.5)  # 2.5 TTLs
            assert slot.held
            assert other.holders("acme") == ["long-run"]
            assert not other.try_claim("acme", "intruder")
        assert other.try_claim("acme", "next")
        await holder.aclose()

    asyncio.run(main())


def test_dead_workers_slot_frees_itself(redis_url: str, prefix: str) -> None:
    """A process takes the only slot and is SIGKILLed mid-run: the slot comes back after the TTL."""
    ttl = 1.0
    proc = subprocess.Popen(
        [sys.executable, str(WORKERS), redis_url, prefix, "acme", "doomed-run", str(ttl)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held"
        limiter = TenantLimiter(redis_url, {"acme": 1}, ttl_s=5, poll_s=0.05, prefix=prefix)
        assert limiter.holders("acme") == ["doomed-run"]
        time.sleep(ttl * 1.5)  # it keeps renewing while alive
        assert not limiter.try_claim("acme", "too-early")
        proc.kill()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)

    async def main() -> float:
        async with limiter.slot("acme", "survivor", wait_s=10) as slot:
            return slot.waited_s

    waited = asyncio.run(main())
    assert waited > 0  # it did have to wait for the dead worker's claim to lapse
    assert limiter.holders("acme") == []


def test_unreachable_redis_for_tenants() -> None:
    from browserq.limits import LimitsUnavailable

    limiter = TenantLimiter("redis://127.0.0.1:1/0", {"acme": 1})
    limiter._handle.retry_delay_s = 0.05

    async def main() -> None:
        async with limiter.slot("acme", "r", wait_s=1):
            pass

    with pytest.raises(LimitsUnavailable, match=r"127\.0\.0\.1:1"):
        asyncio.run(main())
    with pytest.raises(ConfigError, match="ttl_s"):
        TenantLimiter("redis://127.0.0.1:1/0", {}, ttl_s=0.1)
