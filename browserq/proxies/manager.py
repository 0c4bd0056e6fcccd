"""One object per worker process that the runner talks to: choose, wire, report.

    manager = ProxyManager.from_settings(settings)          # once per worker process
    proxy = manager.choose(domain=start_url, identity=None, exclude=tried)
    context = await pool.new_context(**manager.context_options(proxy))
    ...
    kind = manager.report_error(proxy, exc)                 # a navigation raised
    kind = manager.report_response(proxy, status, body)     # a navigation answered
    manager.report_success(proxy)                           # the run got through

Everything is synchronous and short (one Redis round trip, 2 s socket timeout, 2 quick retries);
an async caller may wrap calls in ``asyncio.to_thread`` if it must never block its loop.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import redis

from browserq.proxies.classify import classify_error, classify_response
from browserq.proxies.config import Proxy, ProxyConfig
from browserq.proxies.health import DEFAULT_NAMESPACE, ProxyHealth, ProxyStats, make_redis
from browserq.proxies.rotation import ProxyRotator


class ProxyManager:
    def __init__(
        self,
        config: ProxyConfig,
        *,
        client: redis.Redis | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        jitter: float = 0.1,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.proxies: tuple[Proxy, ...] = config.proxies
        self.health = ProxyHealth(
            client or make_redis(config.redis_url),
            cooldown_s=config.cooldown_s,
            cooldown_max_s=config.cooldown_max_s,
            jitter=jitter,
            namespace=namespace,
            clock=clock,
        )
        self.rotator = ProxyRotator(
            config.proxies, self.health, config.strategy, sticky_ttl_s=config.sticky_ttl_s, rng=rng
        )

    @classmethod
    def from_settings(cls, settings: Any, **kwargs: Any) -> ProxyManager:
        return cls(ProxyConfig.from_settings(settings), **kwargs)

    @property
    def enabled(self) -> bool:
        return bool(self.proxies)

    def choose(
        self,
        *,
        domain: str | None = None,
        identity: str | None = None,
        exclude: frozenset[str] | set[str] = frozenset(),
    ) -> Proxy | None:
        return self.rotator.choose(domain=domain, identity=identity, exclude=exclude)

    @staticmethod
    def context_options(proxy: Proxy | None) -> dict[str, Any]:
        """Keyword arguments for ``BrowserPool.new_context`` (empty without a proxy)."""
        return {"proxy": proxy.playwright_options()} if proxy is not None else {}

    def report_success(self, proxy: Proxy | None) -> None:
        if proxy is not None:
            self.health.record_success(proxy)

    def report_error(self, proxy: Proxy | None, error: BaseException | str) -> str | None:
        """Classify a navigation error; a proxy failure is recorded. Returns the kind or None."""
        kind = classify_error(error)
        if kind is not None and proxy is not None:
            self.health.record_failure(proxy, kind)
        return kind

    def report_response(
        self, proxy: Proxy | None, status: int | None, body_snippet: str | None = None
    ) -> str | None:
        """Classify a navigation response (407 / 403 / 429 / challenge page); recorded if it is one."""
        kind = classify_response(status, body_snippet)
        if kind is not None and proxy is not None:
            self.health.record_failure(proxy, kind)
        return kind

    def stats(self) -> list[ProxyStats]:
        return self.health.stats(self.proxies)
