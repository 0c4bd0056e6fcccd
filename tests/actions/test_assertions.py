"""assert steps: passing ones, and failures that are permanent and say what was expected."""

from __future__ import annotations

from browserq.execute.runtime import Runtime
from tests.conftest import template


def test_asserts_pass_and_fail_permanently(any_runtime: Runtime, demo) -> None:
    passing = template(
        """
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: assert, selector: ".quote"}
          - {action: assert, selector: "#missing", exists: false}
          - {action: assert, text: "Next"}
          - {action: assert, text: "Next", within: "li.next"}
          - {action: assert, url: "re:/quotes/$"}
        """
        % demo.url
    )
    assert any_runtime.run_loaded(passing).status == "completed"
    failing = template(
        """
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: assert, text: "no such words anywhere", timeout_s: 0.5, message: "quotes page lost its words"}
          - {action: navigate, url: "%s/never-reached"}
        """
        % (demo.url, demo.url)
    )
    outcome = any_runtime.run_loaded(failing)
    assert outcome.status == "failed"
    assert outcome.error_code == "ASSERTION_FAILED" and outcome.error_step_path == "1"
    assert "quotes page lost its words" in outcome.error_message
    attempts = [s for s in any_runtime.store.steps.steps(outcome.run_id) if s.step_path == "1"]
    assert len(attempts) == 1 and attempts[0].retryable is False  # permanent: no retry
    assert demo.hits("/never-reached") == 0
