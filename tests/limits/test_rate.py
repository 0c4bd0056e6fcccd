"""Per-domain token buckets: matching, and the shared bucket on a real Redis (parsing: test_specs)."""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time

import pytest
import redis

from browserq.errors import Codes, ConfigError, StepFailed
from browserq.limits import (
    DEFAULT_LIMITS_REDIS_URL,
    InvalidRate,
    LimitsUnavailable,
    Rate,
    RateLimiter,
    RateLimitTimeout,
    host_of,
    limits_redis_url,
)
from browserq.settings import load_settings
from tests.limits import _workers


def test_settings_read_rate_limits_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSERQ_RATE_LIMITS", '{"example.com": "2/s", "*": "10/s"}')
    monkeypatch.setenv("BROWSERQ_BROKER_URL", "redis://broker.internal:6379/3")
    settings = load_settings()
    assert settings.rate_limits == {"example.com": "2/s", "*": "10/s"}
    limiter = RateLimiter.from_settings(settings)
    assert limiter.redis_url == "redis://broker.internal:6379/3"
    assert limiter.default == Rate(10.0) and limiter.per_domain == {"example.com": Rate(2.0)}

    monkeypatch.setenv("BROWSERQ_RATE_LIMITS", "example.com=2/s; *=10/s")
    assert load_settings().rate_limits == {"example.com": "2/s", "*": "10/s"}

    monkeypatch.setenv("BROWSERQ_RATE_LIMITS", "example.com=2/fortnight")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "BROWSERQ_RATE_LIMITS" in str(info.value) and "2/fortnight" in str(info.value)


def test_limits_redis_url_defaults() -> None:
    assert limits_redis_url(load_settings(broker_url="redis://b:6379/2")) == "redis://b:6379/2"
    assert (
        limits_redis_url(load_settings(broker_url="amqp://guest@mq//")) == DEFAULT_LIMITS_REDIS_URL
    )
    explicit = load_settings(broker_url="amqp://guest@mq//", limits_redis_url="redis://lim:6379/5")
    assert limits_redis_url(explicit) == "redis://lim:6379/5"


# --- which bucket a host uses ------------------------------------------------------------------


def test_host_of() -> None:
    assert host_of("https://User@A.Example.com:8443/x?y") == "a.example.com"
    assert host_of("example.com:80") == "example.com"
    assert host_of("Example.COM.") == "example.com"
    assert host_of("http://[::1]:8080/") == "::1"
    assert host_of("about:blank") == "" == host_of("data:text/html,hi")


def test_exact_entry_then_parent_domain_then_default() -> None:
    limiter = RateLimiter(
        DEFAULT_LIMITS_REDIS_URL,
        per_domain={
            "example.com": "1/s",
            "api.example.com": "5/s",
            "free.example.com": "unlimited",
        },
        default="10/s",
    )
    exact = limiter.match("https://api.example.com/v1")
    assert exact and exact.domain == "api.example.com" and exact.rate == Rate(5.0)
    parent = limiter.match("https://www.shop.example.com/")
    assert parent and parent.domain == "example.com" and parent.rate == Rate(1.0)
    assert (
        limiter.match("http://free.example.com/") is None
    )  # explicitly unlimited, no parent search
    assert limiter.match("http://a.free.example.com/") is None
    other = limiter.match("https://notexample.com/")  # not a subdomain of example.com
    assert other and other.domain == "notexample.com" and other.rate == Rate(10.0)
    assert limiter.match("about:blank") is None
    assert not RateLimiter(DEFAULT_LIMITS_REDIS_URL).enabled
    assert RateLimiter(DEFAULT_LIMITS_REDIS_URL).match("https://example.com") is None


def test_ip_hosts_match_only_exactly() -> None:
    limiter = RateLimiter(DEFAULT_LIMITS_REDIS_URL, per_domain={"0.0.1": "1/s", "127.0.0.1": "2/s"})
    match = limiter.match("http://127.0.0.1:8000/")
    assert match and match.rate == Rate(2.0)
    assert limiter.match("http://10.0.0.1/") is None


def test_for_template_overrides_global_entries() -> None:
    base = RateLimiter(DEFAULT_LIMITS_REDIS_URL, per_domain={"example.com": "1/s", "*": "10/s"})
    assert base.for_template(None) is base and base.for_template({}) is base
    tmpl = base.for_template({"example.com": "30/min", "*": "2/s", "slow.example": "1/h"})
    assert tmpl.match("a.example.com").rate == Rate(0.5)  # type: ignore[union-attr]
    assert tmpl.match("other.example").rate == Rate(2.0)  # type: ignore[union-attr]
    assert tmpl.match("slow.example").rate == Rate(1 / 3600)  # type: ignore[union-attr]
    assert base.match("a.example.com").rate == Rate(1.0)  # type: ignore[union-attr]  # untouched
    assert tmpl._handle is base._handle  # one connection per process, not per run
    with pytest.raises(InvalidRate):
        base.for_template({"example.com": "lots"})


# --- the bucket in Redis -------------------------------------------------------------------------


def test_burst_then_wait(redis_url: str, prefix: str) -> None:
    limiter = RateLimiter(redis_url, per_domain={"example.com": "2/s burst 3"}, prefix=prefix)
    assert [limiter.try_acquire("example.com") for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = limiter.try_acquire("https://example.com/page")
    assert 0 < wait <= 0.5
    # a refused try takes nothing: asking again gives (about) the same answer, not a longer one
    assert limiter.try_acquire("example.com") <= wait
    assert limiter.try_acquire("unlimited.example") == 0.0
    # idle buckets expire by themselves
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=prefix + "*"))
    assert len(keys) == 1 and 0 < client.pttl(keys[0]) <= 3000


def test_parent_domain_shares_one_bucket_default_is_per_host(redis_url: str, prefix: str) -> None:
    limiter = RateLimiter(
        redis_url, per_domain={"example.com": "1/min"}, default="1/min", prefix=prefix
    )
    assert limiter.try_acquire("https://a.example.com/") == 0.0
    assert limiter.try_acquire("https://b.example.com/") > 0  # same bucket as a.example.com
    assert limiter.try_acquire("example.com") > 0
    assert limiter.try_acquire("one.test") == 0.0  # default: a bucket per host
    assert limiter.try_acquire("two.test") == 0.0
    assert limiter.try_acquire("one.test") > 0


def test_template_override_uses_its_own_bucket(redis_url: str, prefix: str) -> None:
    base = RateLimiter(redis_url, per_domain={"example.com": "1/min"}, prefix=prefix)
    # 100/min refills a token every 600 ms: no refill between these calls on a slow machine
    fast = base.for_template({"example.com": "100/min burst 10"})
    assert [fast.try_acquire("example.com") for _ in range(10)] == [0.0] * 10
    assert fast.try_acquire("example.com") > 0
    assert base.try_acquire("example.com") == 0.0
    assert base.try_acquire("example.com") > 0
    # a second limiter with the same rate (another worker) shares the bucket
    again = RateLimiter(redis_url, per_domain={"example.com": "1/min"}, prefix=prefix)
    assert again.try_acquire("example.com") > 0


def test_acquire_waits_for_the_next_token(redis_url: str, prefix: str) -> None:
    limiter = RateLimiter(redis_url, per_domain={"example.com": "4/s"}, prefix=prefix)

    async def main() -> tuple[float, float, float]:
        started = time.monotonic()
        first = await limiter.acquire("https://example.com/", deadline_s=5)
        second = await limiter.acquire("https://example.com/", deadline_s=5)
        await limiter.aclose()
        return first, second, time.monotonic() - started

    first, second, elapsed = asyncio.run(main())
    assert first < 0.25 <= second + 0.01
    assert elapsed >= 0.24


def test_deadline_raises_rate_limit_timeout_without_taking(redis_url: str, prefix: str) -> None:
    limiter = RateLimiter(redis_url, per_domain={"example.com": "1/min"}, prefix=prefix)

    async def main() -> RateLimitTimeout:
        await limiter.acquire("https://example.com/a", deadline_s=5)
        with pytest.raises(RateLimitTimeout) as info:
            await limiter.acquire("https://www.example.com/b", deadline_s=2.5)
        with pytest.raises(RateLimitTimeout):
            await limiter.acquire("https://www.example.com/b", deadline_s=-1)  # budget already gone
        await limiter.aclose()
        return info.value

    error = asyncio.run(main())
    assert isinstance(error, StepFailed) and error.code is Codes.RUN_TIMEOUT
    message = str(error)
    assert "www.example.com (limit of example.com)" in message
    assert "1/min" in message and "2.5s left of the run's time budget" in message
    assert 55 < error.wait_s <= 60 and error.budget_s == 2.5
    # nothing was reserved by the refused calls: the next token is still ~60 s away, not 120 s
    assert limiter.try_acquire("example.com") <= 60


def test_bucket_shared_by_two_workers_never_exceeds_rate(redis_url: str, prefix: str) -> None:
    """40 acquisitions at 20/s burst 5 from 4 tasks in 2 limiter instances (threads, own loops)."""
    rate, burst, total = 20.0, 5, 40
    grants: list[float] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        limiter = RateLimiter(
            redis_url, per_domain={"site.example": f"{rate:g}/s burst {burst}"}, prefix=prefix
        )

        async def task() -> None:
            for _ in range(n):
                await limiter.acquire("https://site.example/x", deadline_s=30)
                with lock:
                    grants.append(time.monotonic())

        async def main() -> None:
            await asyncio.gather(task(), task())
            await limiter.aclose()

        try:
            asyncio.run(main())
        except BaseException as exc:
            errors.append(exc)

    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(total // 4,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    elapsed = time.monotonic() - started
    assert not errors, errors
    assert len(grants) == total
    # never more than rate × time + burst: the last of 40 cannot come before (40 - 5) / 20 s
    assert elapsed >= (total - burst) / rate - 0.02
    assert max(grants) - started >= (total - burst) / rate - 0.02
    # and at every point of the run: the k-th grant is no earlier than (k - burst) / rate
    for k, at in enumerate(sorted(grants), start=1):
        assert at - started >= (k - burst) / rate - 0.02, (k, at - started)


def test_bucket_shared_by_processes_counts(redis_url: str, prefix: str) -> None:
    """Two worker processes hammer try_acquire: the tokens they get fit rate × window + burst."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 2.0  # after both interpreters are up
    procs = [
        ctx.Process(
            target=_workers.hammer_try_acquire,
            args=(redis_url, prefix, "10/s burst 3", "site.example", start_at, 1.5, out),
        )
        for _ in range(2)
    ]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=30) for _ in procs]
    for proc in procs:
        proc.join(10)
    window = max(r[1] for r in results) - min(r[0] for r in results)
    taken = sum(r[2] for r in results)
    calls = sum(r[3] for r in results)
    assert calls > taken  # both were refused most of the time
    assert all(r[2] > 0 for r in results)  # and both got tokens
    assert taken <= 10 * window + 3 + 1e-6
    assert taken >= 10  # the bucket does refill (at least ~the first second's worth)


def test_unreachable_redis_is_a_clear_error() -> None:
    limiter = RateLimiter("redis://:hunter2@127.0.0.1:1/0", per_domain={"example.com": "1/s"})
    limiter._handle.retry_delay_s = 0.05
    with pytest.raises(LimitsUnavailable) as info:
        limiter.try_acquire("example.com")
    message = str(info.value)
    assert "127.0.0.1:1" in message and "BROWSERQ_LIMITS_REDIS_URL" in message
    assert "hunter2" not in message

    async def main() -> None:
        with pytest.raises(LimitsUnavailable):
            await limiter.acquire("example.com", deadline_s=5)

    asyncio.run(main())
