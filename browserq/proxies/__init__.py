"""Proxies for browser contexts: configuration, shared health in Redis, rotation, classification.

See :class:`ProxyManager` for the one object a worker needs.
"""

from browserq.proxies.classify import (
    AUTH,
    BLOCKED,
    FAILURE_KINDS,
    REFUSED,
    TIMEOUT,
    TUNNEL,
    classify_error,
    classify_response,
)
from browserq.proxies.config import (
    STRATEGIES,
    Proxy,
    ProxyConfig,
    load_proxies,
    parse_proxy,
    proxy_redis_url,
    redact_proxy_setting,
    redact_url,
)
from browserq.proxies.health import Availability, ProxyHealth, ProxyStats, make_redis
from browserq.proxies.manager import ProxyManager, Reservation
from browserq.proxies.rotation import ProxyRotator, normalize_domain
from browserq.proxies.spares import ProxySpares, proxy_context_options

__all__ = [
    "AUTH",
    "BLOCKED",
    "FAILURE_KINDS",
    "REFUSED",
    "STRATEGIES",
    "TIMEOUT",
    "TUNNEL",
    "Availability",
    "Proxy",
    "ProxyConfig",
    "ProxyHealth",
    "ProxyManager",
    "ProxyRotator",
    "ProxySpares",
    "ProxyStats",
    "Reservation",
    "classify_error",
    "classify_response",
    "load_proxies",
    "make_redis",
    "normalize_domain",
    "parse_proxy",
    "proxy_context_options",
    "proxy_redis_url",
    "redact_proxy_setting",
    "redact_url",
]
