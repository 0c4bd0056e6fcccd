"""One step with its retries in place, through the real runner: what is retried, what is not,
and how an optional or continue_on_error step ends."""

from __future__ import annotations

from browserq.execute.runtime import Runtime
from tests.conftest import template


def _attempts(runtime: Runtime, run_id: str, path: str) -> list[tuple[int, str, str | None]]:
    return [(s.attempt, s.status, s.error_code) for s in runtime.store.steps.steps(run_id) if s.step_path == path]


def test_a_retryable_failure_is_retried_in_place_up_to_its_retries(any_runtime: Runtime, demo) -> None:
    loaded = template(
        f"""
        settings: {{trace: off, step_timeout_s: 1}}
        steps:
          - {{action: navigate, url: "{demo.url}/"}}
          - {{action: click, selector: "#nowhere", retries: 2}}
        """
    )
    outcome = any_runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code, outcome.error_step_path) == ("failed", "SELECTOR_NOT_FOUND", "1")
    assert _attempts(any_runtime, outcome.run_id, "1") == [
        (1, "failed", "SELECTOR_NOT_FOUND"), (2, "failed", "SELECTOR_NOT_FOUND"), (3, "failed", "SELECTOR_NOT_FOUND"),
    ]


def test_a_permanent_failure_is_not_retried(sqlite_runtime: Runtime, demo) -> None:
    loaded = template(
        f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{demo.url}/"}}
          - {{action: assert, text: "a sentence this page never shows", timeout_s: 0.5, retries: 3}}
        """
    )
    outcome = sqlite_runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "ASSERTION_FAILED")
    assert _attempts(sqlite_runtime, outcome.run_id, "1") == [(1, "failed", "ASSERTION_FAILED")]


def test_a_retry_that_succeeds_ends_the_step(sqlite_runtime: Runtime, demo) -> None:
    """The element appears only after the first attempt gave up: the retry finds it."""
    loaded = template(
        f"""
        settings: {{trace: off, allow_eval: true}}
        steps:
          - {{action: navigate, url: "{demo.url}/"}}
          - action: eval
            expression: "setTimeout(() => document.body.insertAdjacentHTML('beforeend', '<b id=late>x</b>'), 1500)"
          - {{action: get, what: text, selector: "#late", timeout_s: 1, retries: 3, into: late}}
        """
    )
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["late"] == "x"
    statuses = [status for _, status, _ in _attempts(sqlite_runtime, outcome.run_id, "2")]
    assert statuses[0] == "failed" and statuses[-1] == "succeeded"


def test_optional_and_continue_on_error_steps_let_the_run_go_on(any_runtime: Runtime, demo) -> None:
    loaded = template(
        f"""
        settings: {{trace: off, step_timeout_s: 1, step_retries: 0}}
        steps:
          - {{action: navigate, url: "{demo.url}/"}}
          - {{action: click, selector: "#nowhere", optional: true}}
          - {{action: click, selector: "#nowhere", continue_on_error: true}}
          - {{action: get, what: url, into: url}}
        """
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["url"].startswith(demo.url)
    assert _attempts(any_runtime, outcome.run_id, "1") == [(1, "skipped", None)]
    assert _attempts(any_runtime, outcome.run_id, "2") == [(1, "failed", "SELECTOR_NOT_FOUND")]
