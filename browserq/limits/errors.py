"""The errors of the fleet-wide limiters, each with the policy the execution layer acts on.

How a limit is *written* is checked by :mod:`browserq.limit_specs`, whose errors (``InvalidRate``,
``InvalidBlockKind``, ``InvalidTenantCaps``: ``ConfigError``) live in :mod:`browserq.errors`, below
the settings and the template schema that raise them; they are re-exported here. The tree at the
top of :mod:`browserq.errors` draws these::

    BrowserqError
    ├── LimitsUnavailable    the limits Redis is unreachable                WAIT
    └── TenantBusy           every slot of the tenant stayed taken          WAIT (retry_in_s)
    StepFailed
    └── RateLimitTimeout     the next request slot is past the run's budget RETRY_RUN (RUN_TIMEOUT)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# Re-exported: their home is browserq.errors now, below browserq.limit_specs that raises them.
from browserq.errors import (
    BrowserqError,
    Codes,
    ErrorClass,
    InvalidBlockKind,
    InvalidRate,
    InvalidTenantCaps,
    StepFailed,
)

if TYPE_CHECKING:  # pragma: no cover
    from browserq.limit_specs import Rate


class LimitsUnavailable(BrowserqError):
    """The Redis that holds the fleet-wide limits could not be reached (even after a retry).

    ``WAIT``: the run itself is fine; it can go once Redis answers again.
    """

    policy = ErrorClass.WAIT


class RateLimitTimeout(StepFailed):
    """Waiting for the domain's rate limit would exceed the run's remaining time budget.

    A ``StepFailed`` with code ``RUN_TIMEOUT`` (retry the run later), so the runner records it
    like any step failure; its policy is its code's (``RETRY_RUN``).
    """

    def __init__(self, host: str, domain: str, rate: Rate, wait_s: float, budget_s: float) -> None:
        self.host = host
        self.domain = domain
        self.rate = rate
        self.wait_s = wait_s
        self.budget_s = budget_s
        where = host if host == domain else f"{host} (limit of {domain})"
        super().__init__(
            Codes.RUN_TIMEOUT,
            f"rate limit {rate} for {where} needs a {wait_s:.1f}s wait for the next request slot, "
            f"more than the {max(budget_s, 0.0):.1f}s left of the run's time budget",
        )


__all__ = [
    "InvalidBlockKind",
    "InvalidRate",
    "InvalidTenantCaps",
    "LimitsUnavailable",
    "RateLimitTimeout",
]


class TenantBusy(BrowserqError):
    """Every slot of the tenant stayed taken for the whole wait. Retry the run later."""

    policy = ErrorClass.WAIT

    @property
    def retry_in_s(self) -> float | None:  # type: ignore[override]  # computed; read-only over the base's class default
        """When a slot may free up (the earliest claim's expiry), else after another wait as long."""
        return self.retry_after_s or (self.wait_s if self.wait_s is not None else self.waited_s)

    def __init__(
        self, tenant: str, cap: int, waited_s: float, retry_after_s: float | None, *, wait_s: float | None = None
    ) -> None:
        self.tenant = tenant
        #: how long the run was allowed to wait for a slot (BROWSERQ_TENANT_WAIT_S)
        self.wait_s = wait_s
        self.cap = cap
        self.waited_s = waited_s
        #: when the earliest current claim would expire if not renewed (a hint, not a promise)
        self.retry_after_s = retry_after_s
        if cap == 0:
            msg = f"tenant {tenant!r} has a concurrency cap of 0: its runs are paused"
        else:
            msg = (
                f"tenant {tenant!r} already has {cap} run(s) in progress (its cap is {cap}); "
                f"no slot freed up within {waited_s:.1f}s"
            )
        super().__init__(msg)
