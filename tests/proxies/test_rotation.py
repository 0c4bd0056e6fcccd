"""Every strategy, shared across rotators the way several workers share them."""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable

import pytest
from structlog.testing import capture_logs

from browserq.errors import ConfigError
from browserq.proxies import Proxy, ProxyHealth, ProxyRotator, make_redis, normalize_domain
from tests.proxies.conftest import PASSWORD, REDIS_URL, connect_redis
from tests.proxies.servers import free_port

Make = Callable[..., ProxyRotator]


def test_no_proxies_means_none(make_rotator: Make) -> None:
    assert make_rotator(proxies=[]).choose(domain="example.com") is None


def test_unknown_strategy(make_rotator: Make) -> None:
    with pytest.raises(ConfigError, match="round_robin"):
        make_rotator("fastest")


def test_round_robin_is_shared_by_two_workers(
    make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> None:
    # Two "workers": separate rotators, separate Redis connections, one namespace.
    worker_a = ProxyRotator(proxies, make_health(client=connect_redis()), "round_robin")
    worker_b = ProxyRotator(proxies, make_health(client=connect_redis()), "round_robin")
    picks = [(worker_a if i % 2 == 0 else worker_b).choose() for i in range(6)]
    assert [p.id for p in picks if p] == [p.id for p in proxies * 2]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_round_robin_skips_a_cooling_proxy_and_takes_it_back(
    make_rotator: Make, make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> None:
    clock = Clock()
    rotator = make_rotator(health=make_health(clock=clock))
    p0, p1, p2 = proxies
    rotator.health.record_failure(p1, "refused")  # 0.2 s
    picks = {rotator.choose().id for _ in range(6)}  # type: ignore[union-attr]
    assert picks == {p0.id, p2.id}
    clock.now += 0.25
    picks = {rotator.choose().id for _ in range(6)}  # type: ignore[union-attr]
    assert picks == {p0.id, p1.id, p2.id}


def test_all_cooling_still_returns_the_soonest(make_rotator: Make, proxies: list[Proxy]) -> None:
    rotator = make_rotator(health=None)
    health = rotator.health
    for p in proxies:
        health.record_failure(p, "timeout")
    health.record_failure(proxies[0], "timeout")
    health.record_failure(proxies[2], "timeout")
    assert rotator.choose() == proxies[1]


def test_random_only_picks_available(
    make_rotator: Make, make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> None:
    rotator = make_rotator("random", health=make_health(clock=Clock()), rng=random.Random(7))
    rotator.health.record_failure(proxies[0], "blocked")
    picks = Counter(rotator.choose().id for _ in range(40))  # type: ignore[union-attr]
    assert set(picks) == {proxies[1].id, proxies[2].id}


def test_least_used_balances_and_is_atomic_across_threads(
    make_rotator: Make, proxies: list[Proxy]
) -> None:
    rotator = make_rotator("least_used")
    rotator.health.record_use(proxies[0], 5)  # p0 was busy before
    assert [rotator.choose().id for _ in range(2)] == [proxies[1].id, proxies[2].id]  # type: ignore[union-attr]
    rotators = [
        make_rotator(
            "least_used", health=ProxyHealth(connect_redis(), namespace=rotator.health.namespace)
        )
        for _ in range(4)
    ]

    def worker(r: ProxyRotator) -> None:
        for _ in range(10):
            r.choose()

    threads = [threading.Thread(target=worker, args=(r,)) for r in rotators]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    uses = [s.uses for s in rotator.health.stats(proxies)]
    assert sum(uses) == 5 + 2 + 40
    assert max(uses) - min(uses) <= 1  # atomic pick-and-count: no two workers took the same slot


def test_sticky_domain_keeps_then_reassigns_after_failure(
    make_rotator: Make, make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> None:
    clock = Clock()
    worker_a = make_rotator("sticky_domain", health=make_health(clock=clock))
    worker_b = make_rotator("sticky_domain", health=make_health(clock=clock))
    first = worker_a.choose(domain="https://Shop.Example.com/cart")
    assert first is not None
    for url in ("shop.example.com", "http://shop.example.com:8080/x", "SHOP.EXAMPLE.COM."):
        assert worker_b.choose(domain=url) == first  # same mapping from the other worker
    other = worker_a.choose(domain="news.example.org")
    assert other is not None and other != first  # a new domain gets the next proxy
    worker_a.health.record_failure(first, "blocked")
    with capture_logs() as logs:
        moved = worker_b.choose(domain="shop.example.com")
    assert moved is not None and moved != first
    assert any(entry["event"] == "sticky proxy reassigned" for entry in logs)
    assert PASSWORD not in repr(logs)
    clock.now += 0.25  # first recovers, but the domain stays with its new proxy
    assert worker_a.choose(domain="shop.example.com") == moved
    assert worker_a.assignment(domain="shop.example.com") == moved


def test_sticky_identity_and_fallback_without_key(make_rotator: Make, proxies: list[Proxy]) -> None:
    rotator = make_rotator("sticky_identity")
    mine = rotator.choose(identity="account-17")
    assert all(rotator.choose(identity="account-17") == mine for _ in range(3))
    assert rotator.choose(identity="x" * 500) is not None  # long identities are hashed into the key
    assert {rotator.choose().id for _ in range(3)} == {p.id for p in proxies}  # type: ignore[union-attr]
    # exclude wins over stickiness, and moves the mapping
    moved = rotator.choose(identity="account-17", exclude={mine.id})  # type: ignore[union-attr]
    assert moved != mine and rotator.choose(identity="account-17") == moved


def test_sticky_assignment_expires(make_rotator: Make) -> None:
    rotator = make_rotator("sticky_domain", sticky_ttl_s=1)
    rotator.choose(domain="a.example")
    key = rotator.sticky_key(domain="a.example")
    assert key is not None and 0 < rotator.redis.ttl(key) <= 1


@pytest.mark.parametrize("strategy", ["round_robin", "random", "least_used", "sticky_domain"])
def test_exclude_picks_another_proxy(
    make_rotator: Make, proxies: list[Proxy], strategy: str
) -> None:
    rotator = make_rotator(strategy)
    failed = rotator.choose(domain="example.com")
    assert failed is not None
    for _ in range(5):
        retry = rotator.choose(domain="example.com", exclude={failed.id})
        assert retry is not None and retry != failed
    # Excluding everything is ignored rather than running without a proxy.
    with capture_logs() as logs:
        assert rotator.choose(exclude={p.id for p in proxies}) is not None
    assert any("excluded" in entry["event"] for entry in logs)


def test_uses_are_counted_for_every_strategy(make_rotator: Make, proxies: list[Proxy]) -> None:
    rotator = make_rotator("round_robin")
    for _ in range(6):
        rotator.choose()
    assert [s.uses for s in rotator.health.stats(proxies)] == [2, 2, 2]


def test_redis_down_rotates_locally(proxies: list[Proxy], namespace: str) -> None:
    health = ProxyHealth(
        make_redis(f"redis://127.0.0.1:{free_port()}/0", retries=0, timeout_s=0.2),
        namespace=namespace,
    )
    for strategy in ("round_robin", "least_used", "sticky_domain"):
        rotator = ProxyRotator(proxies, health, strategy)
        with capture_logs():
            picks = [rotator.choose(domain="a.example") for _ in range(3)]
        assert all(p in proxies for p in picks)
        if strategy == "sticky_domain":
            assert len(set(picks)) == 1
        else:
            assert len(set(picks)) == 3


def test_normalize_domain() -> None:
    assert normalize_domain("https://User:pw@Shop.Example.com:443/x?y") == "shop.example.com"
    assert normalize_domain("Example.COM:8080/path") == "example.com"
    assert normalize_domain("example.com.") == "example.com"
    assert REDIS_URL.endswith("/7")


def test_manager_from_settings(tmp_path, namespace: str) -> None:  # type: ignore[no-untyped-def]
    from browserq.proxies import ProxyManager
    from browserq.settings import load_settings

    settings = load_settings(
        database_url=f"sqlite:///{tmp_path / 'x.db'}",
        proxies=f"http://alice:{PASSWORD}@127.0.0.1:3128#region=de, socks5://127.0.0.1:1080",
        proxy_strategy="sticky_identity",
        proxy_redis_url=REDIS_URL,
    )
    manager = ProxyManager.from_settings(settings, namespace=namespace)
    assert manager.enabled and manager.config.strategy == "sticky_identity"
    proxy = manager.choose(identity="acct-1")
    assert proxy is not None and manager.choose(identity="acct-1") == proxy
    options = manager.context_options(manager.proxies[0])
    assert options == {
        "proxy": {"server": "http://127.0.0.1:3128", "username": "alice", "password": PASSWORD}
    }
    assert manager.context_options(None) == {}
    assert (
        manager.report_error(None, "net::ERR_PROXY_CONNECTION_FAILED") == "refused"
    )  # classified, not recorded
    assert manager.report_response(proxy, 200, "<p>fine</p>") is None
    assert PASSWORD not in repr(manager.config) and PASSWORD not in repr(manager.stats())
    empty = ProxyManager.from_settings(load_settings(database_url=f"sqlite:///{tmp_path / 'y.db'}"))
    assert not empty.enabled and empty.choose(domain="example.com") is None
