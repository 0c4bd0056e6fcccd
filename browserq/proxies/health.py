"""Proxy health shared by every worker, in Redis.

Per proxy, one hash ``{namespace}:health:{id}``::

    successes, uses, fail:refused, fail:tunnel, fail:auth, fail:blocked, fail:timeout,
    consecutive_failures, cooldown_until (epoch seconds), last_failure_kind, last_failure_at,
    last_success_at, label

Every update is one atomic step (a Lua script or a MULTI transaction), so any number of worker
processes can report on the same proxy at once. A failure puts the proxy in cooldown for
``base * 2**(consecutive_failures - 1)`` seconds, capped at ``max`` and shortened by up to
``jitter`` (10 %) so proxies that failed together do not all come back in the same instant. A
success resets the streak and ends any cooldown. After a cooldown the proxy is offered again; if it
fails again the next cooldown is twice as long.

Times are wall-clock epoch seconds of the worker hosts (keep them NTP-synced).

If Redis is unreachable (after the client's own retries) the proxy layer degrades instead of
failing runs: reports are dropped with a warning and every proxy counts as available.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple, cast

import redis
import structlog
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from browserq.errors import ConfigError
from browserq.proxies.classify import FAILURE_KINDS
from browserq.proxies.config import Proxy

log = structlog.get_logger(__name__)

DEFAULT_NAMESPACE = "browserq:proxy"
#: Health of a proxy nobody reported on for this long expires (a removed proxy cleans itself up).
HEALTH_TTL_S = 30 * 86400

_FAILURE_LUA = """
local n = redis.call('HINCRBY', KEYS[1], 'consecutive_failures', 1)
redis.call('HINCRBY', KEYS[1], 'fail:' .. ARGV[1], 1)
local now = tonumber(ARGV[2])
local duration = tonumber(ARGV[3]) * (2 ^ (n - 1))
if duration > tonumber(ARGV[4]) then duration = tonumber(ARGV[4]) end
duration = duration * tonumber(ARGV[5])
local untl = now + duration
local current = tonumber(redis.call('HGET', KEYS[1], 'cooldown_until') or '0') or 0
if current > untl then untl = current end
redis.call('HSET', KEYS[1], 'cooldown_until', string.format('%.6f', untl),
  'last_failure_kind', ARGV[1], 'last_failure_at', ARGV[2], 'label', ARGV[6])
redis.call('EXPIRE', KEYS[1], ARGV[8])
redis.call('SADD', KEYS[2], ARGV[7])
return {n, string.format('%.6f', untl)}
"""


def make_redis(url: str, *, retries: int = 2, timeout_s: float = 2.0) -> redis.Redis:
    """A Redis client for the proxy layer: short timeouts, a couple of quick retries."""
    return redis.Redis.from_url(
        url,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), retries),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        health_check_interval=30,
        decode_responses=True,
    )


class Availability(NamedTuple):
    """Proxies that may be used now. ``all_cooling`` means every candidate was cooling down and
    ``proxies`` holds only the one whose cooldown ends first."""

    proxies: list[Proxy]
    all_cooling: bool


@dataclass(frozen=True)
class ProxyStats:
    id: str
    label: str
    successes: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    uses: int = 0
    consecutive_failures: int = 0
    cooling_down_until: float | None = None  # epoch seconds; None when not cooling down
    last_failure_kind: str | None = None

    @property
    def failures_total(self) -> int:
        return sum(self.failures.values())

    @property
    def success_rate(self) -> float | None:
        """Successes / (successes + failures); None before any outcome was reported."""
        total = self.successes + self.failures_total
        return self.successes / total if total else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(failures_total=self.failures_total, success_rate=self.success_rate)
        return data


class ProxyHealth:
    """Shared per-proxy counters and cooldowns. Thread-safe (redis-py pools connections)."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        cooldown_s: float = 30.0,
        cooldown_max_s: float = 900.0,
        jitter: float = 0.1,
        namespace: str = DEFAULT_NAMESPACE,
        clock: Callable[[], float] = time.time,
        failed: Callable[[str], None] | None = None,
    ) -> None:
        if cooldown_s <= 0 or cooldown_max_s < cooldown_s:
            raise ConfigError("proxy cooldown: need 0 < cooldown_s <= cooldown_max_s")
        if not 0 <= jitter < 1:
            raise ConfigError("proxy cooldown jitter must be in [0, 1)")
        self.redis = client
        self.cooldown_s = cooldown_s
        self.cooldown_max_s = cooldown_max_s
        self.jitter = jitter
        self.namespace = namespace
        self.clock = clock
        #: Told the kind of every failure reported here (the worker's metrics), Redis or not.
        self.failed = failed
        self._failure_script = client.register_script(_FAILURE_LUA)

    @classmethod
    def from_config(
        cls, config: Any, client: redis.Redis | None = None, **kwargs: Any
    ) -> ProxyHealth:
        return cls(
            client or make_redis(config.redis_url),
            cooldown_s=config.cooldown_s,
            cooldown_max_s=config.cooldown_max_s,
            **kwargs,
        )

    # --- keys ------------------------------------------------------------------------------
    def key(self, proxy_id: str) -> str:
        return f"{self.namespace}:health:{proxy_id}"

    @property
    def ids_key(self) -> str:
        return f"{self.namespace}:ids"

    # --- reports -----------------------------------------------------------------------------
    def record_success(self, proxy: Proxy) -> None:
        """A run (or navigation) through ``proxy`` worked: reset its failure streak and cooldown."""
        key = self.key(proxy.id)
        try:
            pipe = self.redis.pipeline(transaction=True)
            pipe.hincrby(key, "successes", 1)
            pipe.hset(
                key,
                mapping={
                    "consecutive_failures": 0,
                    "cooldown_until": 0,
                    "last_success_at": f"{self.clock():.6f}",
                    "label": proxy.label,
                },
            )
            pipe.expire(key, HEALTH_TTL_S)
            pipe.sadd(self.ids_key, proxy.id)
            pipe.execute()
        except redis.RedisError as exc:
            _degraded("record_success", proxy, exc)

    def record_failure(self, proxy: Proxy, kind: str) -> float | None:
        """Count a failure of ``kind`` and start (or extend) a cooldown. Returns its end (epoch
        seconds), or None if Redis was unreachable."""
        if kind not in FAILURE_KINDS:
            raise ValueError(
                f"unknown proxy failure kind {kind!r}; expected one of {', '.join(FAILURE_KINDS)}"
            )
        if self.failed is not None:
            self.failed(kind)  # counted here whether or not Redis takes the report
        now = self.clock()
        factor = 1.0 - random.random() * self.jitter
        try:
            streak, until = self._failure_script(
                keys=[self.key(proxy.id), self.ids_key],
                args=[
                    kind,
                    f"{now:.6f}",
                    self.cooldown_s,
                    self.cooldown_max_s,
                    factor,
                    proxy.label,
                    proxy.id,
                    HEALTH_TTL_S,
                ],
            )
        except redis.RedisError as exc:
            _degraded("record_failure", proxy, exc)
            return None
        log.warning(
            "proxy failed; cooling down",
            proxy_id=proxy.id,
            proxy=proxy.label,
            kind=kind,
            consecutive_failures=int(streak),
            cooldown_s=round(float(until) - now, 3),
        )
        return float(until)

    def record_use(self, proxy: Proxy, by: int = 1) -> None:
        """Count that a run was assigned ``proxy`` (least_used reads this)."""
        try:
            pipe = self.redis.pipeline(transaction=True)
            pipe.hincrby(self.key(proxy.id), "uses", by)
            pipe.hset(self.key(proxy.id), "label", proxy.label)
            pipe.expire(self.key(proxy.id), HEALTH_TTL_S)
            pipe.sadd(self.ids_key, proxy.id)
            pipe.execute()
        except redis.RedisError as exc:
            _degraded("record_use", proxy, exc)

    # --- queries -----------------------------------------------------------------------------
    def cooldowns(self, proxies: Sequence[Proxy]) -> dict[str, float]:
        """``proxy id -> cooldown_until`` (0 when never failed). Raises redis errors."""
        pipe = self.redis.pipeline(transaction=False)
        for proxy in proxies:
            pipe.hget(self.key(proxy.id), "cooldown_until")
        return {p.id: float(v or 0) for p, v in zip(proxies, pipe.execute(), strict=True)}

    def available(self, proxies: Sequence[Proxy], now: float | None = None) -> Availability:
        """The proxies not cooling down, in the given order. When every one is cooling down, the
        one whose cooldown ends first (``all_cooling=True``): never empty if ``proxies`` is not."""
        if not proxies:
            return Availability([], False)
        now = self.clock() if now is None else now
        try:
            until = self.cooldowns(proxies)
        except redis.RedisError as exc:
            _degraded("available", None, exc)
            return Availability(list(proxies), False)
        ready = [p for p in proxies if until[p.id] <= now]
        if ready:
            return Availability(ready, False)
        soonest = min(proxies, key=lambda p: until[p.id])
        log.warning(
            "every proxy is cooling down; using the one that recovers first",
            proxy_id=soonest.id,
            proxy=soonest.label,
            recovers_in_s=round(until[soonest.id] - now, 3),
            candidates=len(proxies),
        )
        return Availability([soonest], True)

    def is_cooling(self, proxy: Proxy, now: float | None = None) -> bool:
        now = self.clock() if now is None else now
        try:
            return self.cooldowns([proxy])[proxy.id] > now
        except redis.RedisError as exc:
            _degraded("is_cooling", proxy, exc)
            return False

    def stats(self, proxies: Iterable[Proxy] | None = None) -> list[ProxyStats]:
        """Per-proxy figures: of ``proxies`` (in order), or of every proxy Redis knows about."""
        now = self.clock()
        if proxies is None:
            ids = sorted(self._known_ids())
            labels: dict[str, str] = {}
        else:
            plist = list(proxies)
            ids = [p.id for p in plist]
            labels = {p.id: p.label for p in plist}
        pipe = self.redis.pipeline(transaction=False)
        for proxy_id in ids:
            pipe.hgetall(self.key(proxy_id))
        result = []
        for proxy_id, data in zip(ids, pipe.execute(), strict=True):
            if not data and proxy_id not in labels:
                continue  # expired
            until = float(data.get("cooldown_until") or 0)
            result.append(
                ProxyStats(
                    id=proxy_id,
                    label=labels.get(proxy_id) or data.get("label") or proxy_id,
                    successes=int(data.get("successes") or 0),
                    failures={kind: int(data.get(f"fail:{kind}") or 0) for kind in FAILURE_KINDS},
                    uses=int(data.get("uses") or 0),
                    consecutive_failures=int(data.get("consecutive_failures") or 0),
                    cooling_down_until=until if until > now else None,
                    last_failure_kind=data.get("last_failure_kind") or None,
                )
            )
        return result

    def _known_ids(self) -> set[str]:
        """Every proxy id Redis holds health for (text: the client decodes, see make_redis)."""
        return cast("set[str]", self.redis.smembers(self.ids_key))

    def reset(self, proxies: Iterable[Proxy] | None = None) -> None:
        """Forget the health of ``proxies`` (or of every known proxy)."""
        ids = (
            [p.id for p in proxies]
            if proxies is not None
            else list(self._known_ids())
        )
        if ids:
            self.redis.delete(*[self.key(i) for i in ids])
            self.redis.srem(self.ids_key, *ids)


def _degraded(operation: str, proxy: Proxy | None, exc: Exception) -> None:
    log.warning(
        "proxy health unavailable (redis); continuing without it",
        operation=operation,
        proxy_id=proxy.id if proxy else None,
        error=type(exc).__name__,
    )
