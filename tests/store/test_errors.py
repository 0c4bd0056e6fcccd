"""The store's errors (browserq.store.errors): each one's policy, the waits the busy ones ask
for, their codes, and that the tree in browserq/errors.py draws every one of them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from datetime import UTC, datetime, timedelta

import pytest

import browserq.errors
import browserq.store
from browserq.errors import BrowserqError, Codes, ErrorClass, StepFailed, StoreError
from browserq.store import (
    ArtifactPathDenied,
    DuplicateRun,
    IdentityBusy,
    IdentityDisabled,
    IdentityError,
    IdentityLeaseLost,
    IdentityNotFound,
    IllegalTransition,
    LeaseBusy,
    LeaseLost,
    NotInReview,
    RunAlreadyFinished,
    Store,
    StoreUnavailable,
)
from browserq.store import errors as store_errors
from tests.store.helpers import new_run

POLICIES = {
    StoreUnavailable: ErrorClass.WAIT,
    LeaseBusy: ErrorClass.WAIT,
    IdentityBusy: ErrorClass.WAIT,
    DuplicateRun: ErrorClass.PERMANENT,
    IllegalTransition: ErrorClass.PERMANENT,
    RunAlreadyFinished: ErrorClass.PERMANENT,
    LeaseLost: ErrorClass.PERMANENT,
    IdentityError: ErrorClass.PERMANENT,
    IdentityNotFound: ErrorClass.PERMANENT,
    IdentityDisabled: ErrorClass.PERMANENT,
    IdentityLeaseLost: ErrorClass.PERMANENT,
    NotInReview: ErrorClass.PERMANENT,
}


def _store_error_classes() -> set[type[BaseException]]:
    """Every exception class defined anywhere in browserq.store."""
    found: set[type[BaseException]] = set()
    for info in pkgutil.iter_modules(browserq.store.__path__, "browserq.store."):
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__.startswith("browserq.store"):
                found.add(value)
    return found


def _in(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


def test_every_store_error_lives_in_store_errors() -> None:
    classes = _store_error_classes()
    assert classes == set(POLICIES) | {ArtifactPathDenied}
    assert {cls.__module__ for cls in classes} == {"browserq.store.errors"}
    for cls in classes:
        assert getattr(browserq.store, cls.__name__) is cls  # re-exported as before


def test_the_error_tree_draws_every_store_error() -> None:
    tree = browserq.errors.__doc__ or ""
    for cls in _store_error_classes():
        assert f"── {cls.__name__} " in tree, cls


@pytest.mark.parametrize("cls", list(POLICIES), ids=lambda cls: cls.__name__)
def test_policies(cls: type[StoreError]) -> None:
    assert issubclass(cls, StoreError)
    assert cls.policy is POLICIES[cls]


def test_the_artifact_path_error_is_a_permanent_step_failure() -> None:
    denied = ArtifactPathDenied("../x escapes")
    assert isinstance(denied, StepFailed) and isinstance(denied, ValueError)
    assert denied.code is Codes.PATH_DENIED and denied.policy is ErrorClass.PERMANENT


def test_identities_that_cannot_be_used_record_identity_unavailable() -> None:
    assert IdentityNotFound("no such identity", name="x").code is Codes.IDENTITY_UNAVAILABLE
    assert IdentityDisabled("x", "banned").code is Codes.IDENTITY_UNAVAILABLE
    assert not issubclass(IdentityDisabled, IdentityBusy)  # waiting does not help


def test_lease_busy_waits_until_the_lease_could_have_expired() -> None:
    wait = LeaseBusy("r1", "w1", _in(30)).retry_in_s
    assert 20.0 < wait <= 31.0
    assert LeaseBusy("r1", "w1", _in(-600)).retry_in_s == 1.0


def test_identity_busy_waits_for_the_earliest_lease() -> None:
    wait = IdentityBusy("a", "r2", _in(20)).retry_in_s
    assert 10.0 < wait <= 20.0
    assert IdentityBusy("a", "r2", _in(-5)).retry_in_s == 1.0
    unknown = IdentityBusy(None, None, None, pool="p", pool_size=2, leased=2)
    assert unknown.retry_in_s == store_errors.IDENTITY_BUSY_DEFAULT_WAIT_S == 5.0


def test_other_store_errors_ask_for_no_particular_wait() -> None:
    assert BrowserqError.retry_in_s is None


def test_an_unavailable_store_asks_for_a_short_jittered_wait() -> None:
    waits = {StoreUnavailable("down").retry_in_s for _ in range(20)}
    wait = store_errors.STORE_UNAVAILABLE_WAIT_S
    assert all(wait <= w <= 2 * wait for w in waits) and len(waits) > 1


def test_a_busy_lease_raised_by_the_store_carries_its_wait(store: Store) -> None:
    run_id = new_run(store)
    store.leases.acquire_lease(run_id, owner="a", ttl_s=120)
    with pytest.raises(LeaseBusy) as busy:
        store.leases.acquire_lease(run_id, owner="b", ttl_s=120)
    assert busy.value.policy is ErrorClass.WAIT
    assert 60.0 < busy.value.retry_in_s <= 121.0
