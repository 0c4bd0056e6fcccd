"""Batches: summaries, the circuit breaker, cancelling what is left (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading

import pytest

from browserq.errors import StoreError
from browserq.store import BatchView, RunStatus, Store
from tests.store.helpers import new_run, template

S = RunStatus
BREAKER = {"min_runs": 10, "max_failure_rate": 0.5}


def _batch(
    store: Store, batch_id: str = "b1", total: int = 6, breaker: dict | None = BREAKER
) -> list[str]:
    store.batches.create_batch(
        batch_id=batch_id, template_name="login", template_version="1", total=total, breaker=breaker
    )
    tid = template(store)
    return [new_run(store, tid, batch_id=batch_id) for _ in range(total)]


def _finish(store: Store, run_id: str, status: str) -> None:
    lease = store.leases.acquire_lease(run_id, owner="w", ttl_s=30)
    store.transitions.finish_run(run_id, status=status, outputs=None, token=lease.token)


def test_summary_counts_statuses(store: Store) -> None:
    runs = _batch(store, total=8)
    empty = store.batches.batch_summary("b1")
    assert isinstance(empty, BatchView)
    assert (empty.total, empty.queued, empty.finished, empty.success_rate) == (8, 8, 0, None)
    assert (empty.breaker, empty.breaker_tripped_at, empty.finished_at) == (BREAKER, None, None)
    assert (empty.template_name, empty.template_version) == ("login", "1")

    _finish(store, runs[0], "completed")
    _finish(store, runs[1], "completed")
    _finish(store, runs[2], "completed")
    _finish(store, runs[3], "failed")
    _finish(store, runs[4], "needs_review")
    store.leases.acquire_lease(runs[5], owner="w", ttl_s=30)
    lease = store.leases.acquire_lease(runs[6], owner="w", ttl_s=30)
    store.transitions.transition(runs[6], "retrying", reason="PAGE_CRASHED", token=lease.token)
    store.cancellation.request_cancel(runs[7], reason="no longer needed")

    summary = store.batches.batch_summary("b1")
    assert (summary.queued, summary.running, summary.retrying) == (0, 1, 1)
    assert (summary.completed, summary.failed, summary.cancelled, summary.needs_review) == (
        3,
        1,
        1,
        1,
    )
    assert summary.finished == 6 and summary.created == 8
    assert summary.success_rate == pytest.approx(3 / 6)
    assert [r.id for r in store.batches.batch_runs("b1", statuses=["completed"])] == sorted(
        runs[:3], key=runs.index
    )
    assert len(store.batches.batch_runs("b1")) == 8
    other = new_run(store)  # runs outside the batch are not counted
    assert store.runs.get_run(other).batch_id is None  # type: ignore[union-attr]
    assert store.runs.get_run(runs[0]).batch_id == "b1"  # type: ignore[union-attr]
    assert store.batches.batch_summary("b1") == summary


def test_batch_errors(store: Store) -> None:
    _batch(store, total=1)
    with pytest.raises(StoreError, match="already exists"):
        store.batches.create_batch(
            batch_id="b1", template_name="x", template_version="1", total=1, breaker=None
        )
    for call in (
        lambda: store.batches.batch_summary("nope"),
        lambda: store.batches.trip_breaker("nope", reason="x"),
        lambda: store.batches.cancel_batch_remaining("nope", reason="x"),
        lambda: store.batches.finish_batch_if_done("nope"),
    ):
        with pytest.raises(StoreError, match="no such batch"):
            call()
    with pytest.raises(StoreError):  # the batch must exist
        new_run(store, batch_id="missing")


def test_breaker_trips_once(store: Store) -> None:
    _batch(store, total=2)
    assert store.batches.trip_breaker("b1", reason="6 of 10 runs failed (60% > 50%)") is True
    assert store.batches.trip_breaker("b1", reason="again") is False
    summary = store.batches.batch_summary("b1")
    assert summary.tripped and summary.breaker_reason == "6 of 10 runs failed (60% > 50%)"


def test_breaker_trips_once_under_concurrency(store_url: str) -> None:
    setup = Store(store_url)
    _batch(setup, total=1)
    stores = [Store(store_url) for _ in range(6)]
    barrier = threading.Barrier(len(stores))
    results: list[bool] = []

    def trip(i: int) -> None:
        barrier.wait()
        results.append(stores[i].batches.trip_breaker("b1", reason=f"caller {i}"))

    threads = [threading.Thread(target=trip, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    try:
        assert sorted(results) == [False] * 5 + [True]
    finally:
        for s in [setup, *stores]:
            s.dispose()


def test_cancel_batch_remaining(store: Store) -> None:
    runs = _batch(store, total=6)
    _finish(store, runs[0], "completed")
    _finish(store, runs[1], "needs_review")
    running = store.leases.acquire_lease(runs[2], owner="w", ttl_s=30)
    retrying = store.leases.acquire_lease(runs[3], owner="w", ttl_s=30)
    store.transitions.transition(runs[3], "retrying", reason="crash", token=retrying.token)
    # runs[4], runs[5] are queued

    assert store.batches.cancel_batch_remaining("b1", reason="breaker tripped") == 4
    statuses = {r.id: r.status for r in store.batches.batch_runs("b1")}
    assert statuses == {
        runs[0]: "completed",
        runs[1]: "needs_review",
        runs[2]: "running",
        runs[3]: "cancelled",
        runs[4]: "cancelled",
        runs[5]: "cancelled",
    }
    for run_id in runs[3:]:
        run = store.runs.get_run(run_id)
        assert run is not None and (run.error_code, run.error_message) == (
            "CANCELLED",
            "breaker tripped",
        )
        assert store.transitions.transitions(run_id)[-1].reason == "cancelled: breaker tripped"
    seen = store.leases.renew_lease(runs[2], token=running.token, ttl_s=30)
    assert seen.cancel_requested and seen.cancel_reason == "breaker tripped"
    assert store.batches.cancel_batch_remaining("b1", reason="again") == 0  # nothing left to do


def test_finish_batch_if_done(store: Store) -> None:
    runs = _batch(store, total=3)
    assert store.batches.finish_batch_if_done("b1").finished_at is None
    _finish(store, runs[0], "completed")
    _finish(store, runs[1], "failed")
    assert store.batches.finish_batch_if_done("b1").finished_at is None
    _finish(store, runs[2], "completed")
    done = store.batches.finish_batch_if_done("b1")
    assert done.finished_at is not None and done.finished == 3
    assert done.success_rate == pytest.approx(2 / 3)
    assert store.batches.finish_batch_if_done("b1").finished_at == done.finished_at  # set once


def test_a_batch_waits_for_all_its_runs(store: Store) -> None:
    store.batches.create_batch(
        batch_id="b2", template_name="login", template_version="1", total=3, breaker=None
    )
    run_id = new_run(store, batch_id="b2")
    _finish(store, run_id, "completed")
    assert store.batches.finish_batch_if_done("b2").finished_at is None  # 2 runs not created yet
    store.batches.trip_breaker("b2", reason="stop submitting")
    assert store.batches.finish_batch_if_done("b2").finished_at is not None
