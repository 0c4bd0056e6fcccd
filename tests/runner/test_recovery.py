"""Recovery through the real runner: logging in again when the session expired, and settling a
side effect whose outcome is unknown (probe its postcondition, never re-run it blindly)."""

from __future__ import annotations

from browserq.execute.runtime import Runtime
from tests.conftest import template

SESSION_TEMPLATE = """
params:
  base_url: {type: url, required: true}
  password: {type: secret, required: true}
settings: {trace: off, step_timeout_s: 2, step_retries: 0, run_retries: 0}
session:
  check: "#welcome"
  login:
    - {action: navigate, url: "${base_url}/login"}
    - {action: fill, selector: "#username", value: demo}
    - {action: fill, selector: "#password", value: "${password}"}
    - {action: click, selector: "button[type=submit]"}
steps:
  - {action: navigate, url: "${base_url}/account"}
  - {action: get, what: text, selector: "#welcome", into: welcome}
"""


def test_expired_session_logs_in_again_and_retries_the_step(any_runtime: Runtime, demo) -> None:
    loaded = template(SESSION_TEMPLATE)
    outcome = any_runtime.run_loaded(loaded, {"base_url": demo.url, "password": "s3cret-pass"})
    assert outcome.status == "completed", outcome
    assert outcome.outputs["welcome"] == "Welcome, demo"
    steps = any_runtime.store.steps.steps(outcome.run_id)
    assert [s.step_path for s in steps if "~login" in s.step_path] == [f"1~login.{i}" for i in range(4)]
    welcome = [s for s in steps if s.step_path == "1"]
    assert [s.status for s in welcome] == ["failed", "succeeded"]
    assert "s3cret-pass" not in repr(steps)


def test_login_that_does_not_help_is_session_expired(any_runtime: Runtime, demo) -> None:
    loaded = template(SESSION_TEMPLATE)
    outcome = any_runtime.run_loaded(loaded, {"base_url": demo.url, "password": "wrong-password"})
    assert (outcome.status, outcome.error_code) == ("failed", "SESSION_EXPIRED")
    assert "session check" in outcome.error_message


#: A side effect that takes effect (it adds #done) and then fails: its outcome is unknown.
LOST_ANSWER = """
settings: {{trace: off, allow_eval: true, step_retries: 1}}
steps:
  - {{action: navigate, url: "{url}/"}}
  - id: send
    action: eval
    expression: "document.body.insertAdjacentHTML('beforeend', '<p id=done>ok</p>'); throw new Error('lost')"
    side_effect: true
    {extra}
"""


def test_an_unknown_side_effect_whose_postcondition_holds_is_recovered(any_runtime: Runtime, demo) -> None:
    loaded = template(LOST_ANSWER.format(url=demo.url, extra='postcondition: {selector: "#done"}'))
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    send = [s for s in any_runtime.store.steps.steps(outcome.run_id) if s.step_path == "1"]
    assert [(s.attempt, s.status) for s in send] == [(1, "unknown"), (2, "succeeded")]
    assert send[0].error_code == "EVAL_ERROR" and send[1].inputs["probe"] == "postcondition"
    assert send[1].output["recovered"] is True


def test_an_unknown_side_effect_without_postcondition_needs_review(any_runtime: Runtime, demo) -> None:
    outcome = any_runtime.run_loaded(template(LOST_ANSWER.format(url=demo.url, extra="")))
    assert (outcome.status, outcome.error_code, outcome.error_step_path) == ("needs_review", "OUTCOME_UNKNOWN", "1")
    send = [s for s in any_runtime.store.steps.steps(outcome.run_id) if s.step_path == "1"]
    assert [s.status for s in send] == ["unknown", "failed"]


def test_on_unknown_retry_runs_the_side_effect_again_within_its_retries(sqlite_runtime: Runtime, demo) -> None:
    extra = 'on_unknown: retry\n    retries: 3\n    postcondition: {selector: "#never"}'
    outcome = sqlite_runtime.run_loaded(template(LOST_ANSWER.format(url=demo.url, extra=extra)))
    assert (outcome.status, outcome.error_code) == ("failed", "EVAL_ERROR")
    send = [s for s in sqlite_runtime.store.steps.steps(outcome.run_id) if s.step_path == "1"]
    assert [(s.attempt, s.status) for s in send] == [(1, "unknown"), (2, "failed"), (3, "unknown"), (4, "failed")]
    assert send[1].error_code == "OUTCOME_UNKNOWN"
