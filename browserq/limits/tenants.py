"""Per-tenant concurrency caps across the whole fleet.

A tenant's running runs are one Redis sorted set: member = run id, score = when that holder's claim
expires (on the Redis clock). Taking a slot is one Lua script: drop expired claims, then claim if
this run already holds one (a redelivered run gets its own slot back) or fewer than ``cap`` do.
The holder renews its claim every third of the TTL; a worker that dies stops renewing and its slot
frees itself after at most ``ttl_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from browserq.errors import ConfigError
from browserq.limit_specs import DEFAULT_KEY, parse_caps
from browserq.limits._redis import RedisHandle, Script, limits_redis_url
from browserq.limits.errors import InvalidTenantCaps, LimitsUnavailable, TenantBusy

if TYPE_CHECKING:  # pragma: no cover
    from browserq.settings import Settings

log = logging.getLogger(__name__)



# KEYS[1] tenant's set; ARGV: run id, cap, ttl ms. Returns {1, 0} when held, else
# {0, ms until the earliest claim expires}.
_CLAIM = Script(
    """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < cap then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ttl + 1000)
  return {1, 0}
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if first[2] then
  return {0, tonumber(first[2]) - now}
end
return {0, -1}
"""
)


@dataclass
class Slot:
    """A held slot: who, and how long it took to get it."""

    tenant: str
    run_id: str
    cap: int | None
    waited_s: float
    #: False after a renewal found the claim gone and the tenant full (Redis lost it, or the
    #: process stalled past the TTL): the run goes on, but the cap may be exceeded briefly.
    held: bool = True


class TenantLimiter:
    """At most ``caps[tenant]`` (else ``default_cap``, else unlimited) concurrent runs per tenant."""

    def __init__(
        self,
        redis_url: str,
        caps: Mapping[str, int] | None = None,
        default_cap: int | None = None,
        *,
        ttl_s: float = 30.0,
        poll_s: float = 0.25,
        prefix: str = "browserq:tenant:",
        retries: int = 1,
    ) -> None:
        caps = parse_caps(dict(caps or {}))
        if DEFAULT_KEY in caps:
            default_cap = caps.pop(DEFAULT_KEY)
        if default_cap is not None and default_cap < 0:
            raise InvalidTenantCaps(f"default_cap must be >= 0, got {default_cap}")
        if ttl_s < 0.3:
            raise ConfigError(f"tenant slot ttl_s must be at least 0.3s, got {ttl_s}")
        self.redis_url = redis_url
        self.caps = caps
        self.default_cap = default_cap
        self.ttl_s = float(ttl_s)
        self.poll_s = float(poll_s)
        self.prefix = prefix
        self._handle = RedisHandle(redis_url, retries=retries)

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> TenantLimiter:
        kwargs.setdefault("ttl_s", settings.tenant_slot_ttl_s)
        return cls(limits_redis_url(settings), settings.tenant_caps, **kwargs)

    def cap_for(self, tenant: str | None) -> int | None:
        """The tenant's cap; None = unlimited (no tenant, or no entry and no default)."""
        if tenant is None:
            return None
        return self.caps.get(tenant, self.default_cap)

    def _key(self, tenant: str) -> str:
        return f"{self.prefix}{tenant}"

    def _args(self, run_id: str, cap: int) -> list[Any]:
        return [run_id, cap, max(1, round(self.ttl_s * 1000))]

    # --- one-shot operations (sync; ops and tests) ---------------------------------------------
    def try_claim(self, tenant: str, run_id: str) -> bool:
        """Claim a slot now if one is free (no renewal: it lapses after ``ttl_s``)."""
        cap = self.cap_for(tenant)
        if cap is None:
            return True
        held, _ = _CLAIM.run(self._handle, [self._key(tenant)], self._args(run_id, cap))
        return bool(int(held))

    def release(self, tenant: str, run_id: str) -> None:
        self._handle.call(lambda c: c.zrem(self._key(tenant), run_id))

    def holders(self, tenant: str) -> list[str]:
        """Run ids holding a live slot of the tenant right now."""

        def go(client: Any) -> list[str]:
            sec, usec = client.time()
            now_ms = sec * 1000 + usec // 1000
            members = client.zrangebyscore(self._key(tenant), f"({now_ms}", "+inf")
            return [m.decode() if isinstance(m, bytes) else m for m in members]

        return self._handle.call(go)

    # --- the context manager -------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def slot(self, tenant: str | None, run_id: str, *, wait_s: float) -> AsyncIterator[Slot]:
        """Hold one of the tenant's slots for the body, waiting up to ``wait_s`` for one.

        Raises :class:`TenantBusy` when none frees up in time. No tenant, or an unlimited one,
        enters at once without touching Redis.
        """
        cap = self.cap_for(tenant)
        if tenant is None or cap is None:
            yield Slot(tenant or "", run_id, None, 0.0)
            return
        started = time.monotonic()
        key = self._key(tenant)
        args = self._args(run_id, cap)
        while True:
            held, expires_ms = await _CLAIM.arun(self._handle, [key], args)
            if int(held):
                break
            waited = time.monotonic() - started
            left = wait_s - waited
            retry_after = int(expires_ms) / 1000 if int(expires_ms) >= 0 else None
            if cap == 0 or left <= 0:
                raise TenantBusy(tenant, cap, waited, retry_after, wait_s=wait_s)
            pause = self.poll_s * random.uniform(0.6, 1.4)
            await asyncio.sleep(min(pause, left))
        slot = Slot(tenant, run_id, cap, time.monotonic() - started)
        done = asyncio.Event()  # a renewer stops on it too: a cancel swallowed inside a call must not keep it
        renewer = asyncio.create_task(self._renew(slot, key, args, done), name=f"tenant-slot-{tenant}")
        try:
            yield slot
        finally:
            done.set()
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            try:
                await self._handle.acall(lambda c: c.zrem(key, run_id))
            except LimitsUnavailable as exc:  # the claim lapses by itself after ttl_s
                log.warning("could not release tenant slot %s/%s: %s", tenant, run_id, exc)

    async def _renew(self, slot: Slot, key: str, args: list[Any], done: asyncio.Event) -> None:
        every = self.ttl_s / 3
        while not done.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), every)
            if done.is_set():
                return
            try:
                held, _ = await _CLAIM.arun(self._handle, [key], args)
            except LimitsUnavailable as exc:
                log.warning("could not renew tenant slot %s/%s: %s", slot.tenant, slot.run_id, exc)
                continue
            if not int(held) and slot.held:
                log.warning(
                    "tenant slot %s/%s lapsed and the tenant is full; the run continues over its cap",
                    slot.tenant,
                    slot.run_id,
                )
            slot.held = bool(int(held))

    # --- housekeeping ----------------------------------------------------------------------------
    def reset(self, tenant: str | None = None) -> int:
        def go(client: Any) -> int:
            keys = (
                [self._key(tenant)]
                if tenant
                else list(client.scan_iter(match=f"{self.prefix}*", count=500))
            )
            return client.delete(*keys) if keys else 0

        return self._handle.call(go)

    def close(self) -> None:
        self._handle.close()

    async def aclose(self) -> None:
        await self._handle.aclose()


#: ``InvalidTenantCaps`` and ``parse_caps`` are re-exported for their old import path.
__all__ = ["InvalidTenantCaps", "Slot", "TenantBusy", "TenantLimiter", "parse_caps"]
