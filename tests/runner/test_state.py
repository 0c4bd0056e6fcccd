"""The runner's contract values: the result dict a task returns, and what ``${...}`` sees."""

from __future__ import annotations

from pathlib import Path

from browserq.errors import ErrorClass
from browserq.journal import ArtifactDir, RunJournal, RunRecords
from browserq.redact import Redactor
from browserq.runner import RunOutcome, RunRequest
from browserq.runner.state import RunState
from tests.conftest import template


def test_a_failed_outcome_is_a_result_dict_with_its_error_and_policy() -> None:
    outcome = RunOutcome("r1", "failed", {"a": 1}, error_code="TIMEOUT", error_message="slow", error_step_path="2")
    assert outcome.as_result() == {
        "run_id": "r1", "status": "failed", "outputs": {"a": 1},
        "error": {"code": "TIMEOUT", "message": "slow", "step": "2"}, "warnings": [],
    }
    assert outcome.error_class is ErrorClass.RETRY_IN_PLACE
    assert RunOutcome("r2", "completed", {}).as_result()["error"] is None
    assert RunOutcome("r2", "completed", {}).error_class is None


def test_the_scope_holds_params_outputs_the_run_and_the_innermost_loop(tmp_path: Path) -> None:
    loaded = template('steps:\n  - {action: navigate, url: "https://example.test/"}')
    request = RunRequest(run_id="r1", run_attempt=2, loaded=loaded, params={"user": "ann"})
    nowhere = RunRecords(None, None, None, None)  # type: ignore[arg-type]  # a journal that never writes
    journal = RunJournal(nowhere, ArtifactDir(tmp_path), run_id="r1", run_attempt=2, token=None,
                         redactor=Redactor({}))
    state = RunState(request=request, redactor=Redactor({}), deadline=0.0, journal=journal)
    state.outputs["n"] = 3
    assert state.scope() == {"user": "ann", "outputs": {"n": 3}, "run": {"id": "r1", "attempt": 2}}
    state.loops += [{"index": 0, "iteration": 1, "last_pass": False}, {"index": 4, "iteration": 5, "last_pass": True}]
    assert state.scope()["loop"] == {"index": 4, "iteration": 5}
    state.fail_at(None, "1[5].0")
    assert (state.failed.record, state.failed.path) == (None, "1[5].0")
