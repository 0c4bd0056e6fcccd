"""Per-domain token buckets shared by every worker, kept in Redis.

One bucket is one Redis hash (``tokens``, ``ts``) updated by one Lua script that refills it by the
time elapsed on the *Redis* clock (``TIME``, so host clocks never matter) and then either takes a
token or says how long to wait. :meth:`RateLimiter.acquire` *reserves* the next token when the wait
fits the caller's budget (the bucket goes negative), so waiters are served in arrival order with
one round trip each and no polling; when it does not fit, nothing is taken and
:class:`RateLimitTimeout` is raised at once instead of sleeping into a certain timeout.

Which bucket a host uses:

* an exact entry (``a.example.com``) wins; otherwise the nearest parent entry (``example.com``).
  A parent entry is *one* bucket for the domain and all its subdomains: ``example.com: 2/s``
  means 2/s to example.com's servers in total, whatever the subdomain;
* otherwise the default (``*``), with one bucket per host;
* an entry of ``unlimited`` (or ``off``/``none``) means no limit (and stops the parent search);
* no entry and no default: no limit, and Redis is not asked.

The bucket key includes the rate, so runs applying the same rate to a domain share a bucket, and a
template that overrides the rate (``settings.rate_limits``) gets a bucket of its own rather than
refilling the global one at a different speed.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from browserq.guards import normalize_host
from browserq.limit_specs import (
    DEFAULT_KEY,
    Rate,
    RateSpec,
    domain_key,
    parse_rate_map,
    parse_rate_or_unlimited,
)
from browserq.limits._redis import RedisHandle, Script, limits_redis_url
from browserq.limits.errors import InvalidRate, RateLimitTimeout

if TYPE_CHECKING:  # pragma: no cover
    from browserq.settings import Settings

#: Told the limited domain a page load fell under (``*``: the default limit, never the host) and
#: how long it waited for its token.
WaitListener = Callable[[str, float], None]


_SCHEME_ONLY = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?!\d+(?:/|$))")


def host_of(url_or_host: str) -> str:
    """The normalized host of a URL or of a bare ``host[:port]``; '' when there is none."""
    text = url_or_host.strip()
    if "://" in text or _SCHEME_ONLY.match(text):  # about:blank, data:..., mailto:... have no host
        try:
            host = urlsplit(text).hostname or ""
        except ValueError:
            return ""
    else:
        host = text.split("/", 1)[0].rsplit("@", 1)[-1]
        if host.startswith("["):
            host = host[1 : host.find("]")] if "]" in host else host
        elif host.count(":") == 1:
            host = host.split(":", 1)[0]
    return normalize_host(host)


def _is_ip(host: str) -> bool:
    return ":" in host or bool(re.fullmatch(r"[\d.]+", host))


# KEYS[1] bucket; ARGV: per_s, burst, max_wait_s (reserve the next token if its wait fits;
# -1 = never reserve). Returns {taken 0/1, wait seconds as a string}.
_TAKE = Script(
    """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local max_wait = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) / 1000000 * rate)
  ts = now
end
local wait = 0
if tokens < 1 then
  wait = (1 - tokens) / rate
  if max_wait < 0 or wait > max_wait then
    return {0, tostring(wait)}
  end
end
tokens = tokens - 1
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(ts))
redis.call('PEXPIRE', KEYS[1], math.ceil(((burst - tokens) / rate + 1) * 1000))
return {1, tostring(wait)}
"""
)


@dataclass(frozen=True, slots=True)
class Match:
    """Which limit a host falls under: the bucket's domain (or the host, for the default)."""

    host: str
    domain: str
    rate: Rate


class RateLimiter:
    """Fleet-wide per-domain rate limits. Cheap to copy with :meth:`for_template`."""

    def __init__(
        self,
        redis_url: str,
        *,
        default: RateSpec = None,
        per_domain: Mapping[str, RateSpec] | None = None,
        prefix: str = "browserq:rate:",
        retries: int = 1,
        waited: WaitListener | None = None,
        _handle: RedisHandle | None = None,
    ) -> None:
        self.redis_url = redis_url
        self.prefix = prefix
        #: Told ``(limited domain or "*", seconds)`` for every token taken (the worker's metrics).
        self.waited = waited
        self._handle = _handle or RedisHandle(redis_url, retries=retries)
        rules: dict[str, Rate | None] = {}
        default_rate = parse_rate_or_unlimited(default)
        for host, spec in (per_domain or {}).items():
            key = domain_key(host)
            if key == DEFAULT_KEY:
                default_rate = parse_rate_or_unlimited(spec)
            else:
                rules[key] = parse_rate_or_unlimited(spec)
        self.default: Rate | None = default_rate
        self.per_domain: dict[str, Rate | None] = rules

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> RateLimiter:
        """The limiter for ``BROWSERQ_RATE_LIMITS`` on ``BROWSERQ_LIMITS_REDIS_URL``."""
        return cls(limits_redis_url(settings), per_domain=settings.rate_limits, **kwargs)

    def for_template(self, overrides: Mapping[str, RateSpec] | None) -> RateLimiter:
        """A limiter whose entries are these global ones overridden by a template's
        ``settings.rate_limits`` (``"*"`` overrides the default). Shares the Redis connection."""
        if not overrides:
            return self
        merged: dict[str, RateSpec] = {DEFAULT_KEY: self.default, **self.per_domain}
        for host, spec in overrides.items():
            merged[domain_key(host)] = spec
        return RateLimiter(
            self.redis_url, per_domain=merged, prefix=self.prefix, waited=self.waited, _handle=self._handle
        )

    # --- lookups -------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.default is not None or any(r is not None for r in self.per_domain.values())

    def match(self, url_or_host: str) -> Match | None:
        """The limit that applies to a URL or host, or None when it is unlimited."""
        host = host_of(url_or_host)
        if not host:
            return None
        candidates = [host]
        if not _is_ip(host):
            labels = host.split(".")
            candidates += [".".join(labels[i:]) for i in range(1, len(labels))]
        for domain in candidates:
            if domain in self.per_domain:
                rate = self.per_domain[domain]
                return None if rate is None else Match(host, domain, rate)
        return None if self.default is None else Match(host, host, self.default)

    def _key(self, match: Match) -> str:
        return f"{self.prefix}{match.domain}|{match.rate.key()}"

    # --- taking tokens ---------------------------------------------------------------------------
    def try_acquire(self, url_or_host: str) -> float:
        """Take a token now if one is free: 0.0 when taken, else the seconds until one would be."""
        match = self.match(url_or_host)
        if match is None:
            return 0.0
        taken, wait = _TAKE.run(
            self._handle, [self._key(match)], [repr(match.rate.per_s), match.rate.burst, -1]
        )
        return 0.0 if int(taken) else max(float(wait), 1e-6)

    async def acquire(self, url_or_host: str, *, deadline_s: float) -> float:
        """Wait for this host's next request slot; return the seconds waited.

        ``deadline_s`` is how long the caller can afford to wait (what is left of the run's
        budget, e.g. ``state.deadline - time.monotonic()``). If the slot is further away than
        that, nothing is taken and :class:`RateLimitTimeout` is raised at once.
        """
        match = self.match(url_or_host)
        if match is None:
            return 0.0
        started = time.monotonic()
        budget = max(0.0, float(deadline_s))
        taken, wait = await _TAKE.arun(
            self._handle,
            [self._key(match)],
            [repr(match.rate.per_s), match.rate.burst, repr(budget)],
        )
        wait = float(wait)
        if not int(taken):
            raise RateLimitTimeout(match.host, match.domain, match.rate, wait, budget)
        if self.waited is not None:
            self.waited(match.domain if match.domain in self.per_domain else DEFAULT_KEY, wait)
        if wait > 0:
            # the slot is ours already (reserved): sleep until it comes
            await asyncio.sleep(wait)
        return time.monotonic() - started

    # --- housekeeping ----------------------------------------------------------------------------
    def reset(self, domains: Iterable[str] | None = None) -> int:
        """Delete buckets (all under this prefix, or those of the given domains). For tests/ops."""

        def go(client: Any) -> int:
            patterns = (
                [f"{self.prefix}{domain_key(d)}|*" for d in domains]
                if domains
                else [f"{self.prefix}*"]
            )
            keys = [k for p in patterns for k in client.scan_iter(match=p, count=500)]
            return client.delete(*keys) if keys else 0

        return self._handle.call(go)

    def close(self) -> None:
        self._handle.close()

    async def aclose(self) -> None:
        await self._handle.aclose()

    def __repr__(self) -> str:
        rules = ", ".join(f"{d}={r or 'unlimited'}" for d, r in self.per_domain.items())
        return f"RateLimiter(default={self.default or 'unlimited'}, {rules})"


#: Re-exported for ``from browserq.limits.rate import ...`` (they are defined in specs/errors).
__all__ = [
    "InvalidRate",
    "Match",
    "Rate",
    "RateLimitTimeout",
    "RateLimiter",
    "RateSpec",
    "host_of",
    "parse_rate_map",
    "parse_rate_or_unlimited",
]
