"""How an execution ends: the final record, the lease given back, the batch's breaker checked.

Also the two ends nobody planned: an execution interrupted from outside (Celery's time limit, a
shutdown, a terminate) and one that crashed. A crash is retried once later and fails the second
time (``EXECUTION_CRASHED``, or ``STORE_WRITE_FAILED`` when the database refused a write), so the
sweeper never re-sends a run into the same crash forever.
"""

from __future__ import annotations

from dataclasses import replace

import structlog

from browserq.browsers.errors import first_line
from browserq.errors import Codes, StoreError
from browserq.execute.breaker import check_batch
from browserq.execute.decide import RetryLater, backoff_s
from browserq.execute.run_request import outcome_of, recorded_outcome
from browserq.journal.entries import store_records
from browserq.journal.journal import write_batch
from browserq.recordable import clean_text, sized
from browserq.runner import RunOutcome
from browserq.settings import Settings
from browserq.store import IllegalTransition, LeaseLost, Store, StoreUnavailable
from browserq.store.states import FINISHED, HELD_VALUES

log = structlog.get_logger(__name__)

#: Executions of one run that may crash (an exception, not a step failure) before it fails
#: EXECUTION_CRASHED: the first crash is retried later, the second ends the run.
MAX_EXECUTION_CRASHES = 2
#: The reason that marks a crashed execution in run_transitions (counted there: no extra column).
CRASH_REASON = "execution crashed"


class RunEnds:
    """Records the end of runs executed by one process (``owner``)."""

    def __init__(self, store: Store, settings: Settings, owner: str) -> None:
        self.store, self.settings, self.owner = store, settings, owner

    def finish(self, run_id: str, token: int, outcome: RunOutcome, batch_id: str | None) -> RunOutcome:
        """Record the run's end (outputs bounded) and check its batch.

        One transaction: status, outputs, error and transition together, with the journal's last
        held-back steps (``outcome.journal_tail``); leaving ``running`` under our own token gives
        the lease back in it (no separate release).
        """
        outcome = self.bounded(outcome)
        try:
            outcome = self._record_with_tail(run_id, token, outcome)
        except (LeaseLost, StoreUnavailable):
            raise
        except StoreError as exc:
            # The database refused the run's end (not an outage): record that, minimally, rather
            # than leave the run running for the sweeper to re-send into the same refusal.
            log.error("run record refused", run_id=run_id, error=first_line(exc))
            ended = f"{outcome.status}{' with ' + outcome.error_code if outcome.error_code else ''}"
            outcome = RunOutcome(
                run_id, "failed", {}, Codes.STORE_WRITE_FAILED.code,
                f"the database refused the run's result ({first_line(exc)}); the run had ended {ended}",
                outcome.error_step_path,
            )
            self.store.transitions.finish_run(
                run_id, status="failed", outputs=None, error_code=outcome.error_code,
                error_message=outcome.error_message, error_step_path=outcome.error_step_path,
                token=token, worker=self.owner,
            )
        if batch_id:
            check_batch(self.store, batch_id)
        return outcome

    def write_tail(self, run_id: str, token: int, outcome: RunOutcome) -> None:
        """For an end other than :meth:`finish` (a completed run handed back): the journal's
        held-back records first, on their own (a refused one is recorded as such)."""
        if outcome.journal_tail:
            self._without_tail(run_id, token, outcome)

    def _without_tail(self, run_id: str, token: int, outcome: RunOutcome) -> RunOutcome:
        refusal = write_batch(self.store.steps, run_id, token, outcome.journal_tail, None)
        if refusal is not None:
            return RunOutcome(run_id, "failed", {}, refusal.code.code, refusal.message, outcome.error_step_path)
        return replace(outcome, journal_tail=[])

    def _record_with_tail(self, run_id: str, token: int, outcome: RunOutcome) -> RunOutcome:
        """The end and the last steps together; when the database refuses that, the steps alone
        (one by one where refused, each refusal recorded), then the end. Returns what was recorded."""
        if not outcome.journal_tail:
            self._record(run_id, token, outcome)
            return outcome
        try:
            self._record(run_id, token, outcome)
            return outcome
        except (LeaseLost, StoreUnavailable):
            raise
        except StoreError:
            pass
        outcome = self._without_tail(run_id, token, outcome)
        self._record(run_id, token, outcome)
        return outcome

    def _record(self, run_id: str, token: int, outcome: RunOutcome) -> None:
        records, _ = store_records(outcome.journal_tail)
        self.store.transitions.finish_run(
            run_id,
            status=outcome.status,
            outputs=outcome.outputs,
            error_code=outcome.error_code,
            error_message=outcome.error_message,
            error_step_path=outcome.error_step_path,
            token=token,
            worker=self.owner,
            reason=outcome.error_message if outcome.status == "needs_review" else None,
            warnings=outcome.warnings,
            steps=records,
        )

    def bounded(self, outcome: RunOutcome) -> RunOutcome:
        """The outcome with recordable outputs within BROWSERQ_MAX_RUN_OUTPUT_BYTES (the runner
        keeps them there step by step; this guards every other way to an end, e.g. a resume)."""
        outputs, size = sized(outcome.outputs or {})
        limit = self.settings.max_run_output_bytes
        message = clean_text(outcome.error_message) if outcome.error_message else outcome.error_message
        if size <= limit:
            return replace(outcome, outputs=outputs, error_message=message)
        return replace(
            outcome, status="failed", outputs={}, error_code=Codes.OUTPUT_TOO_LARGE.code,
            error_message=f"the run's outputs are {size:,} bytes of JSON, over "
            f"BROWSERQ_MAX_RUN_OUTPUT_BYTES={limit:,}; they were not stored",
        )

    def interrupted(self, run_id: str, token: int) -> None:
        """Record a run whose execution was interrupted from outside (it cleaned up already): as
        cancelled when a cancellation was asked for (Celery's terminate records one before it
        signals the process), else as a timeout. Never raises."""
        try:
            run = self.store.runs.get_run(run_id)  # fresh: was a cancellation asked for meanwhile?
            if run is not None and run.cancel_requested_at is not None:
                outcome = RunOutcome(run_id, "cancelled", {}, Codes.CANCELLED.code, run.cancel_reason or "cancelled")
            else:
                outcome = RunOutcome(
                    run_id, "failed", {}, Codes.RUN_TIMEOUT.code,
                    "the run was interrupted before it finished (Celery time limit or shutdown)",
                )
            self.finish(run_id, token, outcome, run.batch_id if run is not None else None)
        except Exception as exc:
            log.warning("could not record the interrupted run", run_id=run_id, error=str(exc))

    def crashed(self, run_id: str, exc: Exception) -> RunOutcome | RetryLater:
        """Record a crashed execution: retry it later the first time, fail it the second.

        Raises ``exc`` again when the crash cannot be recorded (or the run is not ours); the
        lease then expires and the sweeper's re-send counts as a lost worker (the poison cap).
        """
        refused = isinstance(exc, StoreError) and not isinstance(exc, IllegalTransition)
        code = Codes.STORE_WRITE_FAILED if refused else Codes.EXECUTION_CRASHED
        detail = clean_text(f"{type(exc).__name__}: {first_line(exc)}")
        log.error("run execution crashed", run_id=run_id, error=detail, exc_info=exc)
        try:
            run = self.store.runs.get_run(run_id)
            if run is None:
                raise exc
            if run.status in FINISHED:
                return outcome_of(run)
            held = run.status in HELD_VALUES  # running, or waiting for a person
            ours = held and run.lease_owner == self.owner
            if held and not ours:
                raise exc  # someone else holds it now: not ours to record
            token = run.lease_token if ours else None
            crashes = 1 + sum(
                1 for t in self.store.transitions.transitions(run_id) if (t.reason or "").startswith(CRASH_REASON)
            )
            if crashes < MAX_EXECUTION_CRASHES and held:
                countdown = backoff_s(0, self.settings.run_retry_backoff_s, self.settings.run_retry_backoff_max_s)
                reason = f"{CRASH_REASON} ({crashes} of {MAX_EXECUTION_CRASHES}): {detail}"
                self.store.transitions.transition(
                    run_id, "retrying", reason=reason, worker=self.owner, token=token,
                    fields={"error_code": code.code, "error_message": detail},
                )
                self.store.leases.release_lease(run_id, token=run.lease_token)
                return RetryLater(RunOutcome(run_id, "retrying", {}, code.code, detail), countdown)
            message = (
                f"executing the run crashed {crashes} time(s); it is failed so that it cannot crash "
                f"forever. Last crash: {detail}"
            )
            self.store.transitions.finish_run(
                run_id, status="failed", outputs=None, error_code=code.code, error_message=message,
                token=token, worker=self.owner, reason=f"{CRASH_REASON} ({crashes}): {detail}",
            )
            if token is not None:
                self.store.leases.release_lease(run_id, token=token)
            return recorded_outcome(self.store, run_id)
        except Exception as inner:
            if inner is exc:
                raise
            log.error("could not record the crashed execution", run_id=run_id, error=first_line(inner))
            raise exc from inner


def lost_too_often(run_id: str, takeovers: int, what: str = "run") -> RunOutcome:
    """The end of a run (or session) whose lease expired more often than BROWSERQ_MAX_WORKER_LOSSES
    allows: a poison run must not loop from worker to worker for ever."""
    return RunOutcome(
        run_id, "failed", {}, Codes.WORKER_LOST_REPEATEDLY.code,
        f"the {what}'s lease expired {takeovers} times while it was running (its worker "
        "stopped renewing it: crashed, paused or cut off from the database); giving up so "
        f"a poison {what} cannot loop forever (raise BROWSERQ_MAX_WORKER_LOSSES to allow more)",
    )


__all__ = ["CRASH_REASON", "MAX_EXECUTION_CRASHES", "RunEnds", "lost_too_often"]
