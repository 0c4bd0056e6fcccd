"""The batch circuit breaker on a real store (SQLite file): trips once, cancels what is left."""

from __future__ import annotations

import uuid
from pathlib import Path

from browserq.execute import prepare_loaded, record_run
from browserq.execute.breaker import check_batch
from browserq.store import Store
from tests.conftest import template

STEPS = "steps:\n  - {action: navigate, url: 'http://127.0.0.1:9/'}\n"


def batch(store: Store, size: int, breaker: dict | None) -> tuple[str, list[str]]:
    loaded = template(STEPS)
    batch_id = uuid.uuid4().hex
    store.batches.create_batch(batch_id=batch_id, template_name=loaded.name, template_version=loaded.version,
                       total=size, breaker=breaker)
    runs = [prepare_loaded(loaded, {}) for _ in range(size)]
    for run in runs:
        record_run(store, run, secret_box=None, batch_id=batch_id)
    return batch_id, [r.run_id for r in runs]


def fail(store: Store, run_id: str) -> None:
    store.transitions.finish_run(run_id, status="failed", outputs=None, error_code="SELECTOR_NOT_FOUND", error_message="x")


def test_too_many_failures_among_the_first_runs_cancel_the_rest(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'b.db'}")
    store.schema.upgrade()
    try:
        batch_id, runs = batch(store, 5, {"min_runs": 2, "max_failure_rate": 0.5})
        fail(store, runs[0])
        check_batch(store, batch_id)
        assert store.batches.batch_summary(batch_id).breaker_tripped_at is None  # 1 finished < min_runs
        fail(store, runs[1])
        check_batch(store, batch_id)
        summary = store.batches.batch_summary(batch_id)
        assert summary.breaker_tripped_at is not None and "2 of the first 2 runs failed" in summary.breaker_reason
        assert (summary.failed, summary.cancelled, summary.queued) == (2, 3, 0)
        check_batch(store, batch_id)  # tripping twice changes nothing
        assert store.batches.batch_summary(batch_id).cancelled == 3
    finally:
        store.dispose()


def test_a_batch_without_a_breaker_only_closes_when_done(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'b.db'}")
    store.schema.upgrade()
    try:
        batch_id, runs = batch(store, 2, None)
        for run_id in runs:
            fail(store, run_id)
            check_batch(store, batch_id)
        summary = store.batches.batch_summary(batch_id)
        assert summary.breaker_tripped_at is None and summary.cancelled == 0 and summary.failed == 2
    finally:
        store.dispose()
