"""Fleet-wide limits: per-domain rate limits, per-tenant concurrency caps, resource blocking.

* :class:`RateLimiter` — token buckets in Redis, shared by every worker (``BROWSERQ_RATE_LIMITS``);
* :class:`TenantLimiter` — at most N concurrent runs per tenant (``BROWSERQ_TENANT_CAPS``);
* :func:`install_blocking` — abort images/fonts/media/stylesheets in a run's context;
* :func:`install_navigation_gate` — apply the rate limits to every navigation of a context.

How a limit is written (rates, caps, blockable kinds) is parsed in :mod:`browserq.limit_specs`,
a leaf the settings and the template schema import; the errors are in :mod:`browserq.limits.errors`.
Modules inside this package import from those defining modules, never from this ``__init__``.

The Redis holding the limits is ``BROWSERQ_LIMITS_REDIS_URL``; by default the broker when the broker
is Redis, else ``redis://127.0.0.1:6379/0``.
"""

from __future__ import annotations

from browserq.limit_specs import BLOCKABLE, Rate, parse_caps, parse_rate_map, validate_block_kinds
from browserq.limits._redis import DEFAULT_LIMITS_REDIS_URL, limits_redis_url
from browserq.limits.blocking import BlockStats, install_blocking
from browserq.limits.errors import (
    InvalidBlockKind,
    InvalidRate,
    InvalidTenantCaps,
    LimitsUnavailable,
    RateLimitTimeout,
)
from browserq.limits.gate import NavigationGate, install_navigation_gate
from browserq.limits.rate import RateLimiter, host_of
from browserq.limits.tenants import Slot, TenantBusy, TenantLimiter

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
