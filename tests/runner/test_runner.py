"""A whole run through the real runner: its timeout bounds a hung page."""

from __future__ import annotations

from browserq.execute.runtime import Runtime
from tests.conftest import template


def test_run_timeout_bounds_a_hung_page(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        settings: {timeout_s: 1.5, step_timeout_s: 30, run_retries: 0}
        steps:
          - {action: navigate, url: "%s/slow?ms=20000"}
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "failed" and outcome.error_code in {"RUN_TIMEOUT", "TIMEOUT"}
    run = any_runtime.store.runs.get_run(outcome.run_id)
    assert (run.finished_at - run.started_at).total_seconds() < 10
    assert all(s.status != "started" for s in any_runtime.store.steps.steps(outcome.run_id))
