"""The one place where the end of an attempt becomes a decision, by the policy of what ended it.

Every error carries its policy (:class:`browserq.errors.ErrorClass`): a step failure through its
code (``RunOutcome.error_code``), any other ``BrowserqError`` through its type (``exc.policy``,
``exc.retry_in_s`` and, when it has one, ``exc.code``). :func:`decide` turns either into what the
runtime does next, so no caller writes ``except SomethingBusy: countdown = …`` of its own:

    WAIT             retry later, after ``retry_in_s`` (else DEFAULT_WAIT_S)
    RETRY_RUN        retry the run later from its checkpoint, with backoff, while run_retries last
    ROTATE_IDENTITY  like RETRY_RUN, and a run whose identity came from a pool gets *another* one:
                     the identity just used is written into the retrying transition's reason
                     (after ROTATION_MARK); the next attempt, on whichever worker, reads it back
                     from ``run_transitions`` (:func:`excluded_identities`) and excludes it
    INFRASTRUCTURE   resume at once in this process (the browser was relaunched), up to
                     MAX_IN_PROCESS_RESUMES times per execution, then like RETRY_RUN
    PERMANENT, NEEDS_REVIEW, RETRY_IN_PLACE (its step retries are spent)   the run ends
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from browserq.errors import BrowserqError, ErrorClass, ErrorCode
from browserq.runner import RunOutcome

#: Resumes in the same process after the browser died, per execute() call.
MAX_IN_PROCESS_RESUMES = 3
#: How long a WAIT error that names no delay of its own waits.
DEFAULT_WAIT_S = 5.0
#: Marks a rotation in a retrying transition's reason; the identity rotated away from follows it.
ROTATION_MARK = "; rotating away from identity "
#: Policies whose failure spends a run-level retry.
RUN_LEVEL = frozenset({ErrorClass.RETRY_RUN, ErrorClass.ROTATE_IDENTITY, ErrorClass.INFRASTRUCTURE})


@dataclass(frozen=True)
class RetryLater:
    """A run-level failure with retries left: the run is ``retrying`` until ``countdown_s``."""

    outcome: RunOutcome
    countdown_s: float


@dataclass(frozen=True)
class Failure:
    """What ended an attempt, reduced to what a decision needs; ``outcome`` is what is recorded
    if the run ends with it."""

    policy: ErrorClass
    outcome: RunOutcome
    retry_in_s: float | None = None

    @classmethod
    def of_outcome(cls, outcome: RunOutcome) -> Failure:
        """A runner's outcome: its error code carries the policy."""
        return cls(outcome.error_class or ErrorClass.PERMANENT, outcome)

    @classmethod
    def of_error(cls, run_id: str, exc: BrowserqError, *, default_code: ErrorCode) -> Failure:
        """An error raised around the runner (a slot, an identity): its type carries the policy.
        ``default_code`` is recorded when the error has no ``code`` of its own."""
        code = getattr(exc, "code", None)
        code_name = code.code if isinstance(code, ErrorCode) else code if isinstance(code, str) else None
        status = "needs_review" if exc.policy is ErrorClass.NEEDS_REVIEW else "failed"
        outcome = RunOutcome(run_id, status, {}, code_name or default_code.code, str(exc))
        return cls(exc.policy, outcome, exc.retry_in_s)


@dataclass(frozen=True)
class Budget:
    """What the run has spent so far, and the identity of a pool the attempt ran with."""

    used: int  # run-level retries spent (attempts after the first, takeovers not counted)
    allowed: int  # the template's settings.run_retries, else BROWSERQ_RUN_RETRIES
    resumes: int = 0  # in-process resumes in this execute() call
    identity: str | None = None  # the identity leased from ``pool`` for this attempt
    pool: str | None = None


@dataclass(frozen=True)
class Finish:
    """End the run with ``outcome``."""

    outcome: RunOutcome


@dataclass(frozen=True)
class ResumeNow:
    """Record ``reason`` (``retrying``) and run the attempt again at once, in this process."""

    reason: str


@dataclass(frozen=True)
class RetryAfter:
    """Record ``reason`` (``retrying``, with ``fields``), give the lease back, and have the run
    sent again in ``countdown_s``."""

    outcome: RunOutcome
    countdown_s: float
    reason: str
    fields: dict[str, Any] | None = None


Decision = Finish | ResumeNow | RetryAfter


def decide(failure: Failure, budget: Budget, *, backoff_base_s: float, backoff_max_s: float) -> Decision:
    """What to do about ``failure``: see the table in the module docstring."""
    outcome = failure.outcome
    if outcome.status != "failed" and failure.policy is not ErrorClass.WAIT:
        return Finish(outcome)  # completed, cancelled, needs_review: nothing left to decide
    if failure.policy is ErrorClass.WAIT:
        countdown = max(1.0, failure.retry_in_s) if failure.retry_in_s is not None else DEFAULT_WAIT_S
        waiting = RunOutcome(outcome.run_id, "retrying", {}, None, outcome.error_message)
        return RetryAfter(waiting, countdown, f"waiting {countdown:.0f} s: {outcome.error_message}")
    if failure.policy is ErrorClass.INFRASTRUCTURE and budget.resumes < MAX_IN_PROCESS_RESUMES:
        return ResumeNow(f"browser lost ({outcome.error_code}); resuming")
    if failure.policy in RUN_LEVEL and budget.used < budget.allowed:
        countdown = backoff_s(budget.used, backoff_base_s, backoff_max_s)
        reason = f"{outcome.error_code}: retry {budget.used + 1} of {budget.allowed} in {countdown:.0f} s"
        if failure.policy is ErrorClass.ROTATE_IDENTITY and budget.identity and budget.pool:
            reason += f" with another identity of pool {budget.pool!r}{ROTATION_MARK}{budget.identity}"
        fields = {"error_code": outcome.error_code, "error_message": outcome.error_message}
        return RetryAfter(outcome, float(countdown), reason, fields)
    return Finish(outcome)


def excluded_identities(reasons: Iterable[str]) -> list[str]:
    """The identity the run's last rotation moved away from (``[]`` if it never rotated), read
    from its transitions' reasons: persisted, so the next attempt excludes it on any worker."""
    for reason in reversed(list(reasons)):
        if ROTATION_MARK in reason:
            return [reason.rpartition(ROTATION_MARK)[2]]
    return []


def backoff_s(retries: int, base_s: float, max_s: float) -> float:
    """Exponential backoff with "equal jitter": half fixed, half random, so a batch of runs that
    failed together does not retry together. (Celery's helper only takes whole seconds.)"""
    ceiling = min(max_s, base_s * (2**retries))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


__all__ = [
    "DEFAULT_WAIT_S",
    "MAX_IN_PROCESS_RESUMES",
    "ROTATION_MARK",
    "Budget",
    "Decision",
    "Failure",
    "Finish",
    "ResumeNow",
    "RetryAfter",
    "RetryLater",
    "backoff_s",
    "decide",
    "excluded_identities",
]
