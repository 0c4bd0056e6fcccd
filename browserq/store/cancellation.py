"""Cancelling runs: at once when they wait for a worker, by request when one is running them
(the worker sees the request at its next lease renewal and stops)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from browserq.errors import StoreError
from browserq.store.clock import db_now
from browserq.store.models import Run, RunStatus
from browserq.store.plumbing import Database
from browserq.store.states import AWAITING, HELD_VALUES
from browserq.store.transitions import CANCELLED_CODE, Transitions
from browserq.store.views import RunView, to_view


class Cancellation:
    """Cancelling a run (``store.cancellation``; a batch's rest is :mod:`browserq.store.batches`',
    through :meth:`cancel_in`); a cancel is a status change through ``transitions``."""

    def __init__(self, db: Database, transitions: Transitions) -> None:
        self.db = db
        self.transitions = transitions

    def request_cancel(self, run_id: str, *, reason: str) -> RunView:
        """Cancel the run: at once when it is waiting (queued/retrying); when it is running, set
        ``cancel_requested_at`` (its worker sees it at its next renew_lease and stops). A run in
        a final status (needs_review included) is returned unchanged. A run waiting for a person is
        held by its worker like a running one: cancelled by request, within a heartbeat."""
        action = f"cancelling run {run_id}"

        def body(s: Session, _retried: bool) -> RunView:
            run = self.db.lock_run(s, run_id)
            if run is None:
                raise StoreError(f"{action}: no such run {run_id!r}")
            self.cancel_in(s, run, reason, db_now(s))  # compared with the lease's clock
            s.flush()
            return to_view(RunView, run)

        return self.db.tx(action, body, write=True)

    def cancel_in(self, s: Session, run: Run, reason: str, now: datetime) -> bool:
        """(Inside the caller's transaction.) Cancel or request cancellation of a locked run;
        True if anything changed."""
        if run.status in AWAITING:
            self.transitions.apply(
                s,
                run,
                RunStatus.CANCELLED,
                reason=f"cancelled: {reason}",
                worker=None,
                now=now,
                fields={
                    "error_code": CANCELLED_CODE,
                    "error_message": reason,
                    "cancel_requested_at": now,
                    "cancel_reason": reason,
                },
            )
            return True
        if run.status in HELD_VALUES and run.cancel_requested_at is None:
            run.cancel_requested_at = now
            run.cancel_reason = reason
            return True
        return False


__all__ = ["Cancellation"]
