"""The errors of the fleet-wide limits, each with the policy the execution layer acts on.

A leaf module (it imports only :mod:`browserq.errors`), so the settings, the template schema and
the limiters can all raise these without importing each other. The tree at the top of
:mod:`browserq.errors` draws them::

    ConfigError
    ├── InvalidRate          a rate (or a map of them) cannot be parsed     PERMANENT
    ├── InvalidBlockKind     a resource kind that cannot be blocked         PERMANENT
    └── InvalidTenantCaps    tenant caps are malformed                      PERMANENT
    BrowserqError
    └── LimitsUnavailable    the limits Redis is unreachable                WAIT
    StepFailed
    └── RateLimitTimeout     the next request slot is past the run's budget RETRY_RUN (RUN_TIMEOUT)

``TenantBusy`` (WAIT) still lives in :mod:`browserq.limits.tenants`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from browserq.errors import BrowserqError, Codes, ConfigError, ErrorClass, StepFailed

if TYPE_CHECKING:  # pragma: no cover
    from browserq.limits.specs import Rate


class InvalidRate(ConfigError, ValueError):
    """A rate string (or a map of them) could not be parsed; the message shows the valid form.

    Also a ``ValueError``, so pydantic validators can raise it unchanged.
    """

    policy = ErrorClass.PERMANENT


class InvalidBlockKind(ConfigError, ValueError):
    """A resource kind that cannot be blocked (also a ``ValueError`` for pydantic validators)."""

    policy = ErrorClass.PERMANENT


class InvalidTenantCaps(ConfigError, ValueError):
    """``BROWSERQ_TENANT_CAPS`` (or a caps mapping) is malformed."""

    policy = ErrorClass.PERMANENT


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
