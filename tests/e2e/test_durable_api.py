"""The producer-facing durability API against a real worker: idempotency, batches, cancel, dedup."""

from __future__ import annotations

import pytest
from celery.exceptions import TaskRevokedError

from tests.e2e.conftest import wait_until

pytestmark = pytest.mark.slow


def store_for(pg_url: str):
    from browserq.store import Store

    return Store(pg_url)


def test_same_idempotency_key_joins_the_first_run(redis_worker, demo, pg_url) -> None:
    from browserq import run_template

    params = {"start_url": f"{demo.url}/quotes/", "max_pages": 1}
    first = run_template.delay("quotes", params=params, idempotency_key="nightly-2026-11-30")
    second = run_template.delay("quotes", params=params, idempotency_key="nightly-2026-11-30")
    assert second.id == first.id
    assert first.get(timeout=60)["status"] == "completed"
    # Executed once: one attempt, one navigation recorded. (Read from the run's own records, not
    # the demo site's hit counter, which every test of the session shares: a run another test left
    # behind and a sweeper re-sent may visit it too.)
    store = store_for(pg_url)
    try:
        run = store.runs.get_run(first.id)
        steps = store.steps.steps(first.id)
    finally:
        store.dispose()
    assert run.attempt == 1, run
    assert [s.action for s in steps].count("navigate") == 1, [(s.step_path, s.action) for s in steps]


def test_template_derived_idempotency_key(redis_worker, demo, pg_url) -> None:
    from browserq import run_template

    params = {"base_url": demo.url, "password": "s3cret-pass"}
    first = run_template.delay("order", params=params)
    again = run_template.delay("order", params=params)
    other = run_template.delay("order", params={**params, "ref": "other"})
    assert again.id == first.id and other.id != first.id
    store = store_for(pg_url)
    try:
        assert store.runs.get_run(first.id).idempotency_key.startswith("order:")
    finally:
        store.dispose()
    for result in (first, other):
        result.get(timeout=60)


def test_duplicate_delivery_executes_once(redis_config, redis_worker, demo, pg_url) -> None:
    from browserq import run_template

    params = {"base_url": demo.url, "password": "s3cret-pass"}
    demo.latency_ms = 150
    result = run_template.delay("order", params={**params, "ref": "dup"})
    # The same message again (what a redelivery looks like to the worker).
    run_template.apply_async(args=["order@1.0.0"], kwargs={"run_id": result.id}, queue=redis_config.queue)
    assert result.get(timeout=90)["status"] == "completed"
    store = store_for(pg_url)
    try:
        wait_until(lambda: store.runs.get_run(result.id).status == "completed")
        assert demo.submissions_with(result.id) == 1
        attempts = {s.run_attempt for s in store.steps.steps(result.id)}
        assert attempts == {1}
    finally:
        store.dispose()


def test_batch_aggregate_and_circuit_breaker(redis_worker, demo, pg_url) -> None:
    from browserq import batch_summary, run_batch

    good = {"base_url": demo.url, "password": "s3cret-pass"}
    bad = {"base_url": demo.url, "password": "wrong-password"}
    handle = run_batch("order", [dict(good, ref=f"good{i}") for i in range(3)])
    handle.result.get(timeout=120, propagate=False)
    summary = wait_until(lambda: (s := batch_summary(handle.batch_id)).finished_at and s)
    assert (summary.total, summary.completed, summary.failed, summary.success_rate) == (3, 3, 0, 1.0)

    demo.latency_ms = 100
    tripping = run_batch(
        "order",
        [dict(bad, ref=f"bad{i}") for i in range(12)],
        min_runs=3,
        max_failure_rate=0.5,
    )
    summary = wait_until(lambda: (s := batch_summary(tripping.batch_id)).finished_at and s, timeout_s=120)
    assert summary.breaker_tripped_at is not None and "circuit breaker" in summary.breaker_reason
    assert summary.failed >= 3 and summary.cancelled >= 1
    assert summary.failed + summary.cancelled + summary.completed == 12
    store = store_for(pg_url)
    try:
        cancelled = [r for r in store.batches.batch_runs(tripping.batch_id) if r.status == "cancelled"]
        assert cancelled and all("circuit breaker" in (r.error_message or "") for r in cancelled)
    finally:
        store.dispose()


def test_batch_validates_every_item_before_sending(redis_config, pg_url) -> None:
    from browserq import run_batch
    from browserq.errors import ParamError

    with pytest.raises(ParamError) as error:
        run_batch("order", [{"base_url": "http://127.0.0.1/", "password": "x"}, {"password": "x"}])
    assert "item 1" in str(error.value) and "base_url" in str(error.value)


def test_cancel_a_running_run_through_the_api(redis_worker, demo, pg_url) -> None:
    from browserq import cancel_run, run_template

    demo.latency_ms = 400
    result = run_template.delay("quotes", params={"start_url": f"{demo.url}/quotes/", "max_pages": 5})
    store = store_for(pg_url)
    try:
        wait_until(lambda: store.runs.get_run(result.id).status == "running")
        assert cancel_run(result.id, reason="no longer needed") in {"running", "cancelled"}
        with pytest.raises(TaskRevokedError, match="no longer needed"):
            result.get(timeout=60)
        assert result.state == "REVOKED"
        run = store.runs.get_run(result.id)
        assert run.status == "cancelled" and "no longer needed" in run.error_message
        queued = run_template.apply_async(
            args=["quotes"], kwargs={"params": {"start_url": f"{demo.url}/quotes/"}}, countdown=30
        )
        assert cancel_run(queued.id) == "cancelled"
        assert [t.to_status for t in store.transitions.transitions(queued.id)] == ["queued", "cancelled"]
    finally:
        store.dispose()
