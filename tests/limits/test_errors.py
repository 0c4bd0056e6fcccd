"""The limits' errors carry their policy, and keep the base classes callers catch them by."""

from __future__ import annotations

import pytest

from browserq import limits
from browserq.errors import BrowserqError, ConfigError, ErrorClass, StepFailed
from browserq.limit_specs import Rate
from browserq.limits.errors import (
    InvalidBlockKind,
    InvalidRate,
    InvalidTenantCaps,
    LimitsUnavailable,
    RateLimitTimeout,
)


@pytest.mark.parametrize("cls", [InvalidRate, InvalidBlockKind, InvalidTenantCaps])
def test_a_malformed_limit_is_a_permanent_config_error_pydantic_can_raise(cls: type[BrowserqError]) -> None:
    error = cls("bad")
    assert isinstance(error, ConfigError) and isinstance(error, ValueError)
    assert error.policy is ErrorClass.PERMANENT


def test_unreachable_limits_mean_wait_not_fail() -> None:
    error = LimitsUnavailable("the limits Redis at redis://… is unreachable")
    assert error.policy is ErrorClass.WAIT and not isinstance(error, StepFailed)


def test_a_rate_limit_past_the_budget_retries_the_run() -> None:
    error = RateLimitTimeout("a.example.com", "example.com", Rate(2.0), wait_s=7.5, budget_s=-1.0)
    assert isinstance(error, StepFailed) and error.code.code == "RUN_TIMEOUT"
    assert error.policy is ErrorClass.RETRY_RUN
    assert error.message == (
        "rate limit 2/s for a.example.com (limit of example.com) needs a 7.5s wait for the next "
        "request slot, more than the 0.0s left of the run's time budget"
    )


def test_the_old_import_paths_still_give_the_same_classes() -> None:
    from browserq.limits import blocking, rate, tenants

    assert limits.LimitsUnavailable is LimitsUnavailable and limits.InvalidRate is InvalidRate
    assert rate.InvalidRate is InvalidRate and rate.RateLimitTimeout is RateLimitTimeout
    assert tenants.InvalidTenantCaps is InvalidTenantCaps and blocking.InvalidBlockKind is InvalidBlockKind
