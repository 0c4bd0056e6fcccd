"""How an execution ends, on a real store (SQLite file): bounded outputs, crashes retried once."""

from __future__ import annotations

from pathlib import Path

import pytest

from browserq.execute import RetryLater, prepare_loaded, record_run
from browserq.execute.finish import CRASH_REASON, RunEnds
from browserq.runner import RunOutcome
from browserq.store import Store
from tests.conftest import make_settings, template

STEPS = "steps:\n  - {action: navigate, url: 'http://127.0.0.1:9/'}\n"


@pytest.fixture
def ends(tmp_path: Path):
    settings = make_settings(tmp_path, max_run_output_bytes=1024, run_retry_backoff_s=0.01)
    store = Store(settings.database_url)
    store.schema.upgrade()
    yield RunEnds(store, settings, owner="here:1:1")
    store.dispose()


def leased(ends: RunEnds) -> tuple[str, int]:
    prepared = prepare_loaded(template(STEPS), {})
    record_run(ends.store, prepared, secret_box=None)
    lease = ends.store.leases.acquire_lease(prepared.run_id, owner=ends.owner, ttl_s=30)
    return prepared.run_id, lease.token


def test_outputs_over_the_limit_fail_the_run_and_are_not_stored(ends: RunEnds) -> None:
    run_id, token = leased(ends)
    outcome = ends.finish(run_id, token, RunOutcome(run_id, "completed", {"big": "x" * 5000}), None)
    assert (outcome.status, outcome.error_code) == ("failed", "OUTPUT_TOO_LARGE")
    run = ends.store.runs.get_run(run_id)
    assert run.status == "failed" and not run.outputs and run.lease_owner is None


def test_a_crash_is_retried_once_then_fails_the_run(ends: RunEnds) -> None:
    run_id, _ = leased(ends)
    first = ends.crashed(run_id, ValueError("checkpoint unreadable"))
    assert isinstance(first, RetryLater) and first.outcome.error_code == "EXECUTION_CRASHED"
    assert ends.store.runs.get_run(run_id).status == "retrying"
    ends.store.leases.acquire_lease(run_id, owner=ends.owner, ttl_s=30)
    second = ends.crashed(run_id, ValueError("checkpoint unreadable"))
    assert (second.status, second.error_code) == ("failed", "EXECUTION_CRASHED")
    reasons = [t.reason for t in ends.store.transitions.transitions(run_id)]
    assert sum(r.startswith(CRASH_REASON) for r in reasons) == 2


def test_a_crash_of_a_run_someone_else_holds_is_not_recorded(ends: RunEnds) -> None:
    prepared = prepare_loaded(template(STEPS), {})
    record_run(ends.store, prepared, secret_box=None)
    ends.store.leases.acquire_lease(prepared.run_id, owner="elsewhere:2:2", ttl_s=30)
    with pytest.raises(ValueError, match="boom"):
        ends.crashed(prepared.run_id, ValueError("boom"))
    assert ends.store.runs.get_run(prepared.run_id).status == "running"
