"""Template + params → a recorded run → executed: what the producer stores is what the worker needs."""

from __future__ import annotations

from browserq.execute import Runtime, prepare_loaded
from tests.conftest import template

OPTIONAL_SECRET = """
params:
  base_url: {type: url, required: true}
  token: {type: secret}
settings: {trace: off, step_timeout_s: 10}
steps:
  - {action: navigate, url: "${base_url}/quotes/"}
  - {action: get, what: title, into: title}
"""


def test_an_optional_secret_left_unset_does_not_fail_the_run(any_runtime: Runtime, demo) -> None:
    loaded = template(OPTIONAL_SECRET)
    outcome = any_runtime.run_loaded(loaded, {"base_url": demo.url})
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    prepared = prepare_loaded(loaded, {"base_url": demo.url})
    assert prepared.redacted_params.get("token") is None  # nothing to hide, nothing to look for
    run = any_runtime.store.get_run(outcome.run_id)
    assert run.params.get("token") is None and run.status == "completed"


def test_an_optional_secret_given_is_still_masked(any_runtime: Runtime, demo) -> None:
    loaded = template(OPTIONAL_SECRET)
    outcome = any_runtime.run_loaded(loaded, {"base_url": demo.url, "token": "tok-123456"})
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert any_runtime.store.get_run(outcome.run_id).params["token"] == "[secret:token]"
