"""Spares with proxies configured: each spare is made for the proxy its run will use (reserved
when the spare is made), the run takes it, and no run ever gets a context for another proxy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from browserq.execute.runtime import Runtime
from browserq.proxies import REFUSED, Proxy
from tests.conftest import make_settings, template
from tests.proxies.servers import HttpProxy
from tests.support.polling import wait_until
from tests.support.redis import REALISM_DB, redis_url

PROXY_REDIS = redis_url(REALISM_DB)  # this process's own Redis

VISIT = """
params:
  url: {type: url, required: true}
settings: {trace: off, run_retries: 0, step_retries: 0}
steps:
  - {action: navigate, url: "${url}"}
  - {action: get, what: title, into: title}
"""


@pytest.fixture
def proxies() -> Iterator[list[HttpProxy]]:
    servers = [HttpProxy(name=f"p{i}") for i in range(3)]
    for server in servers:
        server.start()
    yield servers
    for server in servers:
        server.stop()


def traffic(server: HttpProxy) -> int:
    return server.forwarded + server.tunnels


class Chosen:
    """Records what the runtime's proxy manager chose for each run."""

    def __init__(self, runtime: Runtime) -> None:
        self.proxies: list[Proxy | None] = []
        self._choose = runtime.proxies.choose
        runtime.proxies.choose = self  # type: ignore[method-assign]

    def __call__(self, **kwargs: Any) -> Proxy | None:
        proxy = self._choose(**kwargs)
        self.proxies.append(proxy)
        return proxy


def run_once(runtime: Runtime, servers: list[HttpProxy], url: str, **options: Any) -> HttpProxy:
    """One run; returns the one proxy server its page loads went through (asserting there is one)."""
    before = [traffic(s) for s in servers]
    outcome = runtime.run_loaded(template(VISIT), {"url": url}, **options)
    assert outcome.status == "completed", outcome
    used = [s for s, b in zip(servers, before, strict=True) if traffic(s) > b]
    assert len(used) == 1, f"a run's page loads went through {len(used)} proxies"
    return used[0]


def by_port(servers: list[HttpProxy], proxy: Proxy | None) -> HttpProxy:
    assert proxy is not None
    return next(s for s in servers if f":{s.port}" in proxy.server)


def settled(runtime: Runtime) -> None:
    """Wait until the pool has its spare again (made in the background after each hand-out)."""
    wait_until(lambda: runtime.pool.spare_contexts == runtime.settings.context_prewarm, 60, "the spare")


def test_spares_are_made_for_the_proxy_of_the_next_run_and_used(tmp_path, demo, proxies) -> None:
    redis.Redis.from_url(PROXY_REDIS).flushdb()
    settings = make_settings(tmp_path, proxies=[p.proxy_url() for p in proxies], proxy_strategy="round_robin",
                             proxy_redis_url=PROXY_REDIS, context_prewarm=1)
    url = f"{demo.url}/quotes/"
    with Runtime(settings) as runtime:
        chosen = Chosen(runtime)
        settled(runtime)
        used = []
        for _ in range(6):
            used.append(run_once(runtime, proxies, url))
            assert used[-1] is by_port(proxies, chosen.proxies[-1]), "the run went through another proxy"
            settled(runtime)
        assert runtime.pool.spare_hits == 6  # every run took the spare made for its proxy
        assert runtime.proxies.reservations_taken == 6
        assert {id(s) for s in used} == {id(s) for s in proxies}  # round robin still rotates them all
        assert runtime.pool.contexts_created == 1 + 6 + 1  # the warm-up, one per run, the spare waiting

        # A named identity never takes a spare made for an anonymous visitor.
        run_once(runtime, proxies, url, identity="erin")
        assert runtime.pool.spare_hits == 6


def test_a_spare_whose_proxy_cooled_down_is_not_used(tmp_path, demo, proxies) -> None:
    redis.Redis.from_url(PROXY_REDIS).flushdb()
    settings = make_settings(tmp_path, proxies=[p.proxy_url() for p in proxies], proxy_strategy="round_robin",
                             proxy_redis_url=PROXY_REDIS, context_prewarm=1, proxy_cooldown_s=600)
    url = f"{demo.url}/quotes/"
    with Runtime(settings) as runtime:
        chosen = Chosen(runtime)
        settled(runtime)
        (reserved,) = runtime.proxies.reserved()
        runtime.proxies.health.record_failure(reserved, REFUSED)  # it fails elsewhere meanwhile
        server = run_once(runtime, proxies, url)
        assert chosen.proxies[-1] != reserved and server is by_port(proxies, chosen.proxies[-1])
        assert traffic(by_port(proxies, reserved)) == 0
        assert runtime.pool.spare_hits == 0  # its spare was not handed to a run with another proxy
        settled(runtime)
        assert [p.id for p in runtime.proxies.reserved()] != [reserved.id]
