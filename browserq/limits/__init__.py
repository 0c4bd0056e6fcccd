"""Fleet-wide limits: per-domain rate limits, per-tenant concurrency caps, resource blocking.

* :class:`RateLimiter` — token buckets in Redis, shared by every worker (``BROWSERQ_RATE_LIMITS``);
* :class:`TenantLimiter` — at most N concurrent runs per tenant (``BROWSERQ_TENANT_CAPS``);
* :func:`install_blocking` — abort images/fonts/media/stylesheets in a run's context;
* :func:`install_navigation_gate` — apply the rate limits to every navigation of a context.

The Redis holding the limits is ``BROWSERQ_LIMITS_REDIS_URL``; by default the broker when the broker
is Redis, else ``redis://127.0.0.1:6379/0``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from browserq.limits._redis import LimitsUnavailable
from browserq.limits.blocking import (
    BLOCKABLE,
    BlockStats,
    InvalidBlockKind,
    install_blocking,
    validate_block_kinds,
)
from browserq.limits.gate import NavigationGate, install_navigation_gate
from browserq.limits.rate import (
    InvalidRate,
    Rate,
    RateLimiter,
    RateLimitTimeout,
    host_of,
    parse_rate_map,
)
from browserq.limits.tenants import InvalidTenantCaps, Slot, TenantBusy, TenantLimiter, parse_caps

if TYPE_CHECKING:  # pragma: no cover
    from browserq.settings import Settings

DEFAULT_LIMITS_REDIS_URL = "redis://127.0.0.1:6379/0"


def limits_redis_url(settings: Settings) -> str:
    """``BROWSERQ_LIMITS_REDIS_URL``, else the broker if it is Redis, else the local default."""
    if settings.limits_redis_url:
        return settings.limits_redis_url
    if settings.broker_url.startswith(("redis://", "rediss://", "unix://")):
        return settings.broker_url
    return DEFAULT_LIMITS_REDIS_URL


__all__ = [
    "BLOCKABLE",
    "DEFAULT_LIMITS_REDIS_URL",
    "BlockStats",
    "InvalidBlockKind",
    "InvalidRate",
    "InvalidTenantCaps",
    "LimitsUnavailable",
    "NavigationGate",
    "Rate",
    "RateLimitTimeout",
    "RateLimiter",
    "Slot",
    "TenantBusy",
    "TenantLimiter",
    "host_of",
    "install_blocking",
    "install_navigation_gate",
    "limits_redis_url",
    "parse_caps",
    "parse_rate_map",
    "validate_block_kinds",
]
