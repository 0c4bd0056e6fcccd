"""Cancelling a run (browserq.store.cancellation): at once when waiting, by request when running."""

from __future__ import annotations

import pytest

from browserq.errors import StoreError
from browserq.store import RunAlreadyFinished, RunStatus, Store
from tests.store.helpers import expire_lease, run_in

S = RunStatus


@pytest.mark.parametrize("status", [S.QUEUED, S.RETRYING])
def test_cancel_a_waiting_run(store: Store, status: RunStatus) -> None:
    run_id, _ = run_in(store, status)
    run = store.cancellation.request_cancel(run_id, reason="customer withdrew")
    assert (run.status, run.error_code, run.error_message) == (
        "cancelled",
        "CANCELLED",
        "customer withdrew",
    )
    assert run.cancel_reason == "customer withdrew" and run.cancel_requested_at is not None
    assert run.finished_at is not None
    last = store.transitions.transitions(run_id)[-1]
    assert (last.from_status, last.to_status, last.reason) == (
        status.value,
        "cancelled",
        "cancelled: customer withdrew",
    )
    with pytest.raises(RunAlreadyFinished):
        store.leases.acquire_lease(run_id, owner="w", ttl_s=30)


def test_cancel_a_running_run(store: Store) -> None:
    run_id, lease = run_in(store, S.RUNNING)
    assert lease is not None
    run = store.cancellation.request_cancel(run_id, reason="stop it")
    assert run.status == "running" and run.cancel_requested and run.cancel_reason == "stop it"
    again = store.cancellation.request_cancel(run_id, reason="second ask")
    assert again.cancel_requested_at == run.cancel_requested_at and again.cancel_reason == "stop it"
    seen = store.leases.renew_lease(run_id, token=lease.token, ttl_s=30)
    assert seen.cancel_requested
    store.transitions.finish_run(
        run_id,
        status="cancelled",
        outputs=None,
        error_code="CANCELLED",
        error_message=seen.cancel_reason,
        token=lease.token,
    )
    assert store.runs.get_run(run_id).status == "cancelled"  # type: ignore[union-attr]


def test_cancel_requested_and_worker_gone(store: Store) -> None:
    run_id, _lease = run_in(store, S.RUNNING)
    store.cancellation.request_cancel(run_id, reason="stop it")
    expire_lease(store, run_id)
    with pytest.raises(RunAlreadyFinished) as caught:
        store.leases.acquire_lease(run_id, owner="b", ttl_s=30)
    assert caught.value.run.status == "cancelled" and caught.value.run.error_code == "CANCELLED"
    assert store.transitions.transitions(run_id)[-1].reason == "cancelled: stop it (its worker w1 is gone)"


@pytest.mark.parametrize("status", [S.COMPLETED, S.FAILED, S.CANCELLED, S.NEEDS_REVIEW])
def test_cancel_a_finished_run_changes_nothing(store: Store, status: RunStatus) -> None:
    run_id, _ = run_in(store, status)
    before = store.runs.get_run(run_id)
    assert store.cancellation.request_cancel(run_id, reason="late") == before
    assert store.runs.get_run(run_id) == before


def test_cancel_unknown_run(store: Store) -> None:
    with pytest.raises(StoreError, match="no such run"):
        store.cancellation.request_cancel("nope", reason="x")
