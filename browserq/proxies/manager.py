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

**Reservations** let a context be prepared before its run asks for it: :meth:`reserve` chooses
(and counts) the proxy of a coming anonymous run now, and the next :meth:`choose` for an anonymous
run with the same sticky mapping takes that reservation instead of choosing again, as long as the
proxy is not excluded and not cooling down (a cooling one is dropped). Thread-safe: the runs of a
``--pool threads`` worker choose on several threads.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from browserq.proxies.classify import classify_error, classify_response
from browserq.proxies.config import Proxy, ProxyConfig
from browserq.proxies.health import DEFAULT_NAMESPACE, ProxyHealth, ProxyStats, make_redis
from browserq.proxies.rotation import ProxyRotator

#: Most reservations kept at once (the oldest is forgotten): a pool asks for one per spare.
MAX_RESERVATIONS = 8


@dataclass(frozen=True)
class Reservation:
    proxy: Proxy
    sticky_key: str | None  # the mapping it was chosen for (None: any anonymous run)


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
        failed: Callable[[str], None] | None = None,
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
            failed=failed,  # told every failure's kind (the worker's metrics)
        )
        self.rotator = ProxyRotator(
            config.proxies, self.health, config.strategy, sticky_ttl_s=config.sticky_ttl_s, rng=rng
        )
        self._reserved: deque[Reservation] = deque(maxlen=MAX_RESERVATIONS)
        self._reserved_lock = threading.Lock()
        self._last_domain: str | None = None
        self.reservations_taken = 0

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
        """The run's proxy: a matching reservation for an anonymous run, else the strategy's choice."""
        if identity is None and self.proxies:
            self._last_domain = domain
            reserved = self._take_reservation(domain, exclude)
            if reserved is not None:
                return reserved
        return self.rotator.choose(domain=domain, identity=identity, exclude=exclude)

    def reserve(self) -> Proxy | None:
        """Choose the proxy of the next anonymous run now (for the domain of the last one)."""
        if not self.proxies:
            return None
        domain = self._last_domain
        proxy = self.rotator.choose(domain=domain)
        if proxy is not None:
            with self._reserved_lock:
                self._reserved.append(Reservation(proxy, self.rotator.sticky_key(domain=domain)))
        return proxy

    def reserved(self) -> list[Proxy]:
        """The proxies reserved and not taken yet, oldest first."""
        with self._reserved_lock:
            return [r.proxy for r in self._reserved]

    def _take_reservation(self, domain: str | None, exclude: frozenset[str] | set[str]) -> Proxy | None:
        key = self.rotator.sticky_key(domain=domain)
        with self._reserved_lock:
            # Made for another domain's mapping (the workload moved on): a guess that missed.
            for stale in [r for r in self._reserved if r.sticky_key != key]:
                self._reserved.remove(stale)
            found = next((r for r in self._reserved if r.proxy.id not in exclude), None)
            if found is None:
                return None
            self._reserved.remove(found)
        if self.health.is_cooling(found.proxy):
            return None  # it failed since: the strategy chooses again (its spare is closed)
        self.reservations_taken += 1
        return found.proxy

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
