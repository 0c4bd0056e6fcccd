"""The one decision by policy: WAIT, RETRY_RUN, ROTATE_IDENTITY (not the same as RETRY_RUN),
INFRASTRUCTURE, PERMANENT and NEEDS_REVIEW, for runner outcomes and for raised errors alike."""

from __future__ import annotations

import pytest

from browserq.errors import BrowserqError, Codes, ErrorClass
from browserq.execute.decide import (
    DEFAULT_WAIT_S,
    MAX_IN_PROCESS_RESUMES,
    ROTATION_MARK,
    Budget,
    Failure,
    Finish,
    ResumeNow,
    RetryAfter,
    decide,
    excluded_identities,
)
from browserq.runner import RunOutcome

BACKOFF = {"backoff_base_s": 4.0, "backoff_max_s": 60.0}


def failed(code: str) -> Failure:
    return Failure.of_outcome(RunOutcome("r1", "failed", {"kept": 1}, code, f"{code} happened", "3"))


class Waiting(BrowserqError):
    policy = ErrorClass.WAIT

    def __init__(self, message: str, retry_in_s: float | None) -> None:
        super().__init__(message)
        self.retry_in_s = retry_in_s


class Unreviewed(BrowserqError):
    policy = ErrorClass.NEEDS_REVIEW
    code = Codes.OUTCOME_UNKNOWN


def test_wait_retries_after_what_the_error_asks_and_spends_nothing() -> None:
    decision = decide(Failure.of_error("r1", Waiting("slot taken", 12.5), default_code=Codes.INTERNAL),
                      Budget(used=2, allowed=2), **BACKOFF)
    assert isinstance(decision, RetryAfter)
    assert decision.countdown_s == 12.5 and decision.fields is None
    assert decision.outcome.status == "retrying" and "slot taken" in decision.reason
    # even with the run-level budget spent: waiting is not a retry
    short = decide(Failure.of_error("r1", Waiting("busy", 0.01), default_code=Codes.INTERNAL),
                   Budget(used=0, allowed=0), **BACKOFF)
    assert isinstance(short, RetryAfter) and short.countdown_s == 1.0
    unknown = decide(Failure.of_error("r1", Waiting("busy", None), default_code=Codes.INTERNAL),
                     Budget(used=0, allowed=0), **BACKOFF)
    assert isinstance(unknown, RetryAfter) and unknown.countdown_s == DEFAULT_WAIT_S


def test_run_level_retry_backs_off_and_records_the_error() -> None:
    decision = decide(failed("RUN_TIMEOUT"), Budget(used=1, allowed=2, identity="alice", pool="shoppers"), **BACKOFF)
    assert isinstance(decision, RetryAfter)
    assert 4.0 <= decision.countdown_s <= 8.0  # equal jitter around base * 2**used
    assert decision.reason.startswith("RUN_TIMEOUT: retry 2 of 2 in ")
    assert ROTATION_MARK not in decision.reason  # a plain retry keeps no exclusion
    assert decision.fields == {"error_code": "RUN_TIMEOUT", "error_message": "RUN_TIMEOUT happened"}
    spent = decide(failed("RUN_TIMEOUT"), Budget(used=2, allowed=2), **BACKOFF)
    assert isinstance(spent, Finish) and spent.outcome.error_code == "RUN_TIMEOUT"
    assert spent.outcome.outputs == {"kept": 1} and spent.outcome.error_step_path == "3"


@pytest.mark.parametrize("code", ["BLOCKED", "PROXY_FAILED", "SESSION_EXPIRED"])
def test_rotate_identity_names_the_identity_to_leave_behind(code: str) -> None:
    decision = decide(failed(code), Budget(used=0, allowed=2, identity="alice", pool="shoppers"), **BACKOFF)
    assert isinstance(decision, RetryAfter)
    assert "another identity of pool 'shoppers'" in decision.reason
    assert excluded_identities(["created", decision.reason]) == ["alice"]
    # without a pool there is nothing to rotate through: a plain run-level retry
    named = decide(failed(code), Budget(used=0, allowed=2, identity=None, pool=None), **BACKOFF)
    assert isinstance(named, RetryAfter) and ROTATION_MARK not in named.reason


def test_infrastructure_resumes_here_first_then_retries_later() -> None:
    first = decide(failed("BROWSER_CRASHED"), Budget(used=0, allowed=2, resumes=0), **BACKOFF)
    assert isinstance(first, ResumeNow) and "browser lost (BROWSER_CRASHED)" in first.reason
    later = decide(failed("BROWSER_CRASHED"), Budget(used=0, allowed=2, resumes=MAX_IN_PROCESS_RESUMES), **BACKOFF)
    assert isinstance(later, RetryAfter)


@pytest.mark.parametrize("code", ["ASSERTION_FAILED", "SELECTOR_NOT_FOUND", "IDENTITY_UNAVAILABLE"])
def test_permanent_and_spent_in_place_failures_end_the_run(code: str) -> None:
    decision = decide(failed(code), Budget(used=0, allowed=5), **BACKOFF)
    assert isinstance(decision, Finish) and decision.outcome.status == "failed"


def test_needs_review_ends_the_run_for_a_person() -> None:
    raised = decide(Failure.of_error("r1", Unreviewed("did it send?"), default_code=Codes.INTERNAL),
                    Budget(used=0, allowed=5), **BACKOFF)
    assert isinstance(raised, Finish)
    assert (raised.outcome.status, raised.outcome.error_code) == ("needs_review", "OUTCOME_UNKNOWN")
    reported = RunOutcome("r1", "needs_review", {}, "OUTCOME_UNKNOWN", "step 4 may have run")
    assert decide(Failure.of_outcome(reported), Budget(used=0, allowed=5), **BACKOFF) == Finish(reported)


def test_an_error_without_a_code_of_its_own_records_the_callers_default() -> None:
    failure = Failure.of_error("r1", BrowserqError("no such identity"), default_code=Codes.IDENTITY_UNAVAILABLE)
    assert failure.policy is ErrorClass.PERMANENT
    decision = decide(failure, Budget(used=0, allowed=2), **BACKOFF)
    assert isinstance(decision, Finish)
    assert (decision.outcome.error_code, decision.outcome.error_message) == ("IDENTITY_UNAVAILABLE", "no such identity")


def test_only_the_last_rotation_is_excluded() -> None:
    reasons = [
        f"BLOCKED: retry 1 of 3 in 2 s with another identity of pool 'p'{ROTATION_MARK}alice",
        "waiting 5 s: pool 'p' has no free identity",
        f"PROXY_FAILED: retry 2 of 3 in 4 s with another identity of pool 'p'{ROTATION_MARK}bob",
        "RUN_TIMEOUT: retry 3 of 3 in 8 s",
    ]
    assert excluded_identities(reasons) == ["bob"]
    assert excluded_identities(["RUN_TIMEOUT: retry 1 of 2 in 3 s"]) == []
