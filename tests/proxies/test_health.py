"""Shared proxy health in Redis: cooldowns that grow, recover and reset; concurrent updates."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
import redis
from structlog.testing import capture_logs

from browserq.proxies import FAILURE_KINDS, Proxy, ProxyHealth, make_redis
from tests.proxies.conftest import PASSWORD
from tests.proxies.servers import free_port
from tests.support.polling import wait_until


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_cooldown_doubles_per_failure_up_to_the_cap(
    make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> None:
    clock = Clock()
    health = make_health(clock=clock, cooldown_s=0.2, cooldown_max_s=0.8)
    p = proxies[0]
    durations = []
    for _ in range(5):
        until = health.record_failure(p, "refused")
        assert until is not None
        durations.append(round(until - clock.now, 6))
        clock.now = until + 0.001  # each failure happens after the previous cooldown ended
    assert durations == [0.2, 0.4, 0.8, 0.8, 0.8]
    [stats] = health.stats([p])
    assert stats.consecutive_failures == 5 and stats.failures["refused"] == 5


def test_jitter_only_shortens_and_stays_small(
    make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> None:
    clock = Clock()
    health = make_health(clock=clock, cooldown_s=10, cooldown_max_s=10, jitter=0.1)
    seen = set()
    for p in proxies:
        until = health.record_failure(p, "timeout")
        assert until is not None and 9.0 <= until - clock.now <= 10.0
        seen.add(until)
    assert len(seen) > 1  # jittered: proxies failing together do not return together


def test_cooldown_is_skipped_then_recovers_in_real_time(
    make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> None:
    health = make_health(cooldown_s=0.2)
    bad = proxies[1]
    health.record_failure(bad, "tunnel")
    assert health.is_cooling(bad)
    assert health.available(proxies) == ([proxies[0], proxies[2]], False)
    wait_until(lambda: not health.is_cooling(bad), 5, "the 0.2 s cooldown to end", interval_s=0.02)
    assert health.available(proxies).proxies == proxies
    # The streak survives the cooldown: failing again right away cools down twice as long.
    start = time.time()
    until = health.record_failure(bad, "tunnel")
    assert until is not None and 0.4 <= until - start <= 0.7


def test_success_resets_the_streak_and_ends_the_cooldown(
    make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> None:
    clock = Clock()
    health = make_health(clock=clock)
    p = proxies[0]
    health.record_failure(p, "blocked")
    health.record_failure(p, "blocked")
    assert health.is_cooling(p)
    health.record_success(p)
    assert not health.is_cooling(p)
    [stats] = health.stats([p])
    assert (stats.consecutive_failures, stats.successes, stats.failures["blocked"]) == (0, 1, 2)
    assert stats.cooling_down_until is None
    until = health.record_failure(p, "blocked")
    assert until is not None and round(until - clock.now, 6) == 0.2  # back to the base cooldown


def test_when_all_cool_down_the_soonest_is_returned_and_logged(
    make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> None:
    clock = Clock()
    health = make_health(clock=clock, cooldown_s=1, cooldown_max_s=100)
    health.record_failure(proxies[0], "refused")
    health.record_failure(proxies[0], "refused")  # 2 s
    health.record_failure(proxies[1], "refused")  # 1 s: recovers first
    health.record_failure(proxies[2], "auth")
    health.record_failure(proxies[2], "auth")
    health.record_failure(proxies[2], "auth")  # 4 s
    with capture_logs() as logs:
        result = health.available(proxies)
    assert result.proxies == [proxies[1]] and result.all_cooling is True
    assert any(entry["event"].startswith("every proxy is cooling down") for entry in logs)
    assert health.available([]) == ([], False)
    clock.now += 1.5
    assert health.available(proxies) == ([proxies[1]], False)
    assert PASSWORD not in repr(logs)


def test_stats_figures(make_health: Callable[..., ProxyHealth], proxies: list[Proxy]) -> None:
    clock = Clock()
    health = make_health(clock=clock)
    p0, p1, p2 = proxies
    for _ in range(3):
        health.record_success(p0)
    health.record_failure(p0, "timeout")
    health.record_use(p1, 2)
    stats = {s.id: s for s in health.stats(proxies)}
    s0 = stats[p0.id]
    assert (s0.successes, s0.failures_total, s0.success_rate) == (3, 1, 0.75)
    assert s0.failures == {kind: (1 if kind == "timeout" else 0) for kind in FAILURE_KINDS}
    assert s0.cooling_down_until == pytest.approx(clock.now + 0.2)
    assert s0.label == "http://alice:***@10.0.0.1:3128" and s0.last_failure_kind == "timeout"
    assert stats[p1.id].uses == 2 and stats[p1.id].success_rate is None
    assert stats[p2.id].successes == 0
    # Without a list: every proxy this namespace has heard of, labels from Redis.
    known = {s.id: s for s in health.stats()}
    assert set(known) == {p0.id, p1.id} and known[p0.id].label == p0.label
    assert PASSWORD not in repr(health.stats()) and PASSWORD not in str(s0.to_dict())
    health.reset([p0])
    assert {s.id for s in health.stats()} == {p1.id}


def test_unknown_failure_kind_is_rejected(
    make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> None:
    with pytest.raises(ValueError, match="unknown proxy failure kind"):
        make_health().record_failure(proxies[0], "gremlins")


def test_concurrent_updates_from_many_threads_are_all_counted(
    make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> None:
    health = make_health(cooldown_s=0.01, cooldown_max_s=0.02)
    p = proxies[0]
    threads, per_thread = 8, 25
    barrier = threading.Barrier(threads)

    def worker(i: int) -> None:
        barrier.wait()
        for j in range(per_thread):
            health.record_failure(p, FAILURE_KINDS[(i + j) % len(FAILURE_KINDS)])
            health.record_success(p)
            health.record_use(p)

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    [stats] = health.stats([p])
    total = threads * per_thread
    assert stats.successes == total and stats.uses == total and stats.failures_total == total
    assert all(stats.failures[kind] == total // len(FAILURE_KINDS) for kind in FAILURE_KINDS)


def test_redis_down_degrades_instead_of_failing(proxies: list[Proxy], namespace: str) -> None:
    client = make_redis(f"redis://127.0.0.1:{free_port()}/0", retries=0, timeout_s=0.2)
    health = ProxyHealth(client, cooldown_s=1, cooldown_max_s=2, namespace=namespace)
    with capture_logs() as logs:
        health.record_success(proxies[0])
        assert health.record_failure(proxies[0], "refused") is None
        assert health.available(proxies) == (proxies, False)
        assert not health.is_cooling(proxies[0])
    assert any("redis" in entry["event"] for entry in logs)
    assert PASSWORD not in repr(logs)
    with pytest.raises(redis.ConnectionError):
        health.stats(proxies)  # an operator query may fail loudly
