"""What a :class:`~browserq.execute.runtime.Runtime`'s parts report as they work, handed to each
part's constructor (the pool, the rate limiter, the proxies' health, the identity slots).

The worker's Prometheus meters are chosen in :mod:`browserq.tasks.observers`; the default reports
to nobody (``browserq run``, tests, a worker with metrics off). The parts import nothing of
``browserq.metrics``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from browserq.browsers.meter import UNMETERED, PoolMeter
from browserq.limits.rate import WaitListener


@dataclass(frozen=True)
class RuntimeMeters:
    """``pool``: launches, recycles, contexts. ``rate_limit_waited``: ``(domain, seconds)`` per
    token. ``proxy_failed``: a failure's kind. ``identity_leased``: leased, busy or unavailable."""

    pool: PoolMeter = field(default=UNMETERED)
    rate_limit_waited: WaitListener | None = None
    proxy_failed: Callable[[str], None] | None = None
    identity_leased: Callable[[str], None] | None = None


#: The meters of a runtime nobody measures.
UNMETERED_RUNTIME = RuntimeMeters()

__all__ = ["UNMETERED_RUNTIME", "RuntimeMeters"]
