"""Choosing a run's proxy. All shared state is in Redis, so every worker rotates together.

Strategies:

* ``round_robin`` — a Redis counter (INCR) walks the available proxies, across all workers.
* ``random`` — uniformly among the available proxies.
* ``least_used`` — the available proxy with the fewest assignments (chosen and counted in one
  Lua call, so two workers cannot both take the same "least used" one on a tie).
* ``sticky_domain`` / ``sticky_identity`` — a Redis mapping ``domain -> proxy id`` (or
  ``identity -> proxy id``) kept while that proxy is available and not excluded, reassigned (round
  robin) when it cools down; forgotten after ``sticky_ttl_s`` unused. Without a domain/identity
  they behave like round_robin.

Proxies cooling down are skipped; when all are cooling down the one that recovers first is used
(see :meth:`ProxyHealth.available`). ``exclude`` removes proxies (e.g. the one that just failed)
unless that would leave none, in which case it is ignored: a run never silently goes proxy-less.
If Redis is unreachable, choices fall back to this process's own round robin / sticky table.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
from collections.abc import Iterable, Sequence
from typing import cast
from urllib.parse import urlsplit

import redis
import structlog

from browserq.errors import ConfigError
from browserq.proxies.config import STRATEGIES, Proxy
from browserq.proxies.health import ProxyHealth

log = structlog.get_logger(__name__)

_LEAST_USED_LUA = """
local best, best_uses = 1, nil
for i, key in ipairs(KEYS) do
  local uses = tonumber(redis.call('HGET', key, 'uses') or '0') or 0
  if best_uses == nil or uses < best_uses then best, best_uses = i, uses end
end
redis.call('HINCRBY', KEYS[best], 'uses', 1)
redis.call('HSET', KEYS[best], 'label', ARGV[best])
redis.call('EXPIRE', KEYS[best], ARGV[#ARGV])
return best
"""

_STICKY_CAS_LUA = """
local current = redis.call('GET', KEYS[1]) or ''
if current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  return ARGV[2]
end
return current
"""


def normalize_domain(value: str) -> str:
    """``https://Shop.Example.com:443/x`` -> ``shop.example.com``; a bare host is lowercased."""
    text = value.strip()
    host = urlsplit(text).hostname if "://" in text else text.split("/")[0].rsplit(":", 1)[0]
    return (host or text).lower().rstrip(".")


def _key_part(value: str) -> str:
    return value if len(value) <= 200 else hashlib.sha256(value.encode()).hexdigest()


class ProxyRotator:
    """Chooses a proxy per run. One per worker process; many processes share the Redis state."""

    def __init__(
        self,
        proxies: Sequence[Proxy],
        health: ProxyHealth,
        strategy: str = "round_robin",
        *,
        sticky_ttl_s: float = 86400.0,
        rng: random.Random | None = None,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ConfigError(
                f"unknown proxy strategy {strategy!r}; use one of {', '.join(STRATEGIES)}"
            )
        self.proxies: tuple[Proxy, ...] = tuple(proxies)
        self.health = health
        self.strategy = strategy
        self.sticky_ttl_s = max(1, math.ceil(sticky_ttl_s))
        self.rng = rng or random.Random()
        self._by_id = {p.id: p for p in self.proxies}
        redis_client = health.redis
        self._least_used_script = redis_client.register_script(_LEAST_USED_LUA)
        self._cas_script = redis_client.register_script(_STICKY_CAS_LUA)
        # Fallbacks while Redis is unreachable (per process only).
        self._local_counter = itertools.count()
        self._local_sticky: dict[str, str] = {}

    @property
    def redis(self) -> redis.Redis:
        return self.health.redis

    def _stuck_id(self, key: str) -> str:
        """The proxy id a sticky key holds ("" if none; text: the client decodes, see make_redis)."""
        return cast("str | None", self.redis.get(key)) or ""

    def _rr_key(self) -> str:
        return f"{self.health.namespace}:rr"

    def sticky_key(self, *, domain: str | None = None, identity: str | None = None) -> str | None:
        """The Redis key of the sticky mapping this strategy uses for a run, if any."""
        if self.strategy == "sticky_domain" and domain:
            return f"{self.health.namespace}:sticky:domain:{_key_part(normalize_domain(domain))}"
        if self.strategy == "sticky_identity" and identity:
            return f"{self.health.namespace}:sticky:identity:{_key_part(identity.strip())}"
        return None

    def assignment(self, *, domain: str | None = None, identity: str | None = None) -> Proxy | None:
        """The proxy currently stuck to ``domain`` / ``identity`` (None if none or not sticky)."""
        key = self.sticky_key(domain=domain, identity=identity)
        if key is None:
            return None
        return self._by_id.get(self._stuck_id(key))

    # --- choosing ------------------------------------------------------------------------------
    def choose(
        self,
        *,
        domain: str | None = None,
        identity: str | None = None,
        exclude: Iterable[str] = frozenset(),
    ) -> Proxy | None:
        """The proxy for a run, or None when no proxies are configured. ``exclude`` holds proxy ids."""
        if not self.proxies:
            return None
        excluded = set(exclude)
        candidates = [p for p in self.proxies if p.id not in excluded]
        if not candidates:
            log.warning("every proxy is excluded; ignoring the exclusion", excluded=len(excluded))
            candidates = list(self.proxies)
        available, all_cooling = self.health.available(candidates)
        key = self.sticky_key(domain=domain, identity=identity)
        counted = False
        try:
            if key is not None:
                proxy = self._sticky(key, available)
            elif self.strategy == "random":
                proxy = self.rng.choice(available)
            elif self.strategy == "least_used":
                proxy, counted = self._least_used(available), True
            else:
                proxy = self._round_robin(available)
        except redis.RedisError as exc:
            log.warning(
                "proxy rotation state unavailable (redis); rotating locally",
                error=type(exc).__name__,
            )
            proxy = self._local_choice(key, available)
        if not counted:
            self.health.record_use(proxy)
        log.debug(
            "proxy chosen",
            proxy_id=proxy.id,
            proxy=proxy.label,
            strategy=self.strategy,
            domain=normalize_domain(domain) if domain else None,
            all_cooling=all_cooling,
        )
        return proxy

    def _round_robin(self, available: Sequence[Proxy]) -> Proxy:
        n = int(self.redis.incr(self._rr_key()))
        return available[(n - 1) % len(available)]

    def _least_used(self, available: Sequence[Proxy]) -> Proxy:
        index = self._least_used_script(
            keys=[self.health.key(p.id) for p in available],
            args=[*(p.label for p in available), 30 * 86400],
        )
        return available[int(index) - 1]

    def _sticky(self, key: str, available: Sequence[Proxy]) -> Proxy:
        usable = {p.id: p for p in available}
        current = self._stuck_id(key)
        if current in usable:
            self.redis.expire(key, self.sticky_ttl_s)
            return usable[current]
        new = self._round_robin(available)
        winner = self._cas_script(keys=[key], args=[current, new.id, self.sticky_ttl_s])
        if winner in usable:
            chosen = usable[winner]  # another worker assigned a usable proxy first: share it
        else:
            self.redis.set(key, new.id, ex=self.sticky_ttl_s)
            chosen = new
        if current:
            previous = self._by_id.get(current)
            log.info(
                "sticky proxy reassigned",
                mapping=key.removeprefix(f"{self.health.namespace}:sticky:")[:80],
                previous=previous.label if previous else current,
                proxy=chosen.label,
            )
        return chosen

    def _local_choice(self, key: str | None, available: Sequence[Proxy]) -> Proxy:
        usable = {p.id: p for p in available}
        if key is not None and self._local_sticky.get(key) in usable:
            return usable[self._local_sticky[key]]
        proxy = (
            self.rng.choice(available)
            if self.strategy == "random"
            else available[next(self._local_counter) % len(available)]
        )
        if key is not None:
            self._local_sticky[key] = proxy.id
        return proxy
