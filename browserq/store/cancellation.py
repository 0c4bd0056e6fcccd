"""Cancelling runs: at once when they wait for a worker, by request when one is running them
(the worker sees the request at its next lease renewal and stops)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from browserq.errors import StoreError
from browserq.store.clock import db_now
from browserq.store.models import Run, RunStatus
from browserq.store.states import AWAITING, HELD_VALUES
from browserq.store.transitions import CANCELLED_CODE, TransitionMethods
from browserq.store.views import RunView, to_view


class CancelMethods(TransitionMethods):
    """Cancellation of :class:`browserq.store.Store` (one run here; a batch's rest in
    :mod:`browserq.store.batches`)."""

    def request_cancel(self, run_id: str, *, reason: str) -> RunView:
        """Cancel the run: at once when it is waiting (queued/retrying); when it is running, set
        ``cancel_requested_at`` (its worker sees it at its next renew_lease and stops). A run in
        a final status (needs_review included) is returned unchanged. A run waiting for a person is
        held by its worker like a running one: cancelled by request, within a heartbeat."""
        action = f"cancelling run {run_id}"

        def body(s: Session, _retried: bool) -> RunView:
            run = self._lock_run(s, run_id)
            if run is None:
                raise StoreError(f"{action}: no such run {run_id!r}")
            self._cancel(s, run, reason, db_now(s))  # compared with the lease's clock
            s.flush()
            return to_view(RunView, run)

        return self._tx(action, body, write=True)

    def _cancel(self, s: Session, run: Run, reason: str, now: datetime) -> bool:
        """Cancel or request cancellation of a locked run; True if anything changed."""
        if run.status in AWAITING:
            self._apply_transition(
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


__all__ = ["CancelMethods"]
