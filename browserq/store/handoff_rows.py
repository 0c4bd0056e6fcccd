"""The rows of waits for people as a transition and :mod:`browserq.store.handoffs` touch them: the
wait a run is in now, and closing it when the run leaves ``waiting_for_human`` any other way than
by its worker's own end of the wait (the sweeper, a takeover, a cancel). Kept apart from the
repository so :mod:`browserq.store.transitions` can close a wait without depending on it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from browserq.store.human_models import Handoff
from browserq.store.models import RunStatus

#: The kind of a handoffs row that only shows a running run (no wait, no input).
WATCH = "watch"
#: The outcome a handoff gets when the run leaves waiting_for_human other than by its worker.
_OUTCOME_OF = {
    RunStatus.CANCELLED: "cancelled",
    RunStatus.RUNNING: "interrupted",  # taken over: its new worker will ask again
    RunStatus.QUEUED: "interrupted",
    RunStatus.RETRYING: "interrupted",
    RunStatus.FAILED: "interrupted",
}


def open_handoff_row(s: Session, run_id: str) -> Handoff | None:
    """The run's newest handoff that has not ended (a wait, or a watch of the running run)."""
    query = (
        select(Handoff)
        .where(Handoff.run_id == run_id, Handoff.ended_at.is_(None))
        .order_by(Handoff.id.desc())
        .limit(1)
    )
    return s.scalars(query).first()


def close_open_handoff(s: Session, run_id: str, to: RunStatus, now: datetime) -> None:
    """The run leaves waiting_for_human by anything but its worker's own end of the wait: its
    handoff gets the outcome ``to`` implies (a watch of the running run stays open: its worker
    closes it)."""
    s.execute(
        update(Handoff)
        .where(Handoff.run_id == run_id, Handoff.ended_at.is_(None), Handoff.kind != WATCH)
        .values(ended_at=now, outcome=_OUTCOME_OF.get(to, "interrupted"))
        .execution_options(synchronize_session=False)
    )


__all__ = ["WATCH", "close_open_handoff", "open_handoff_row"]
