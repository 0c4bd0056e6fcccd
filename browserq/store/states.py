"""The run state machine: which status may follow which.

    queued       → running | cancelled | failed
    running      → completed | failed | cancelled | needs_review | retrying
                   | running  (a takeover: another worker acquires an expired or dead lease)
                   | queued   (re-enqueued by the sweeper)
    retrying     → running | cancelled | failed | queued
    needs_review → completed | failed | cancelled  (an operator resolves it)
    completed, failed, cancelled → nothing

An illegal transition is a bug in the caller: :class:`IllegalTransition` is raised and nothing is
written. Every legal one is recorded in ``run_transitions`` by the store.
"""

from __future__ import annotations

from browserq.errors import StoreError
from browserq.store.models import RunStatus

_S = RunStatus

LEGAL: dict[RunStatus, frozenset[RunStatus]] = {
    _S.QUEUED: frozenset({_S.RUNNING, _S.CANCELLED, _S.FAILED}),
    _S.RUNNING: frozenset(
        {
            _S.COMPLETED,
            _S.FAILED,
            _S.CANCELLED,
            _S.NEEDS_REVIEW,
            _S.RETRYING,
            _S.RUNNING,
            _S.QUEUED,
        }
    ),
    _S.RETRYING: frozenset({_S.RUNNING, _S.CANCELLED, _S.FAILED, _S.QUEUED}),
    _S.NEEDS_REVIEW: frozenset({_S.COMPLETED, _S.FAILED, _S.CANCELLED}),
    _S.COMPLETED: frozenset(),
    _S.FAILED: frozenset(),
    _S.CANCELLED: frozenset(),
}

#: Statuses that set ``finished_at`` (``needs_review`` waits for a person, not for a worker).
FINISHED: frozenset[RunStatus] = frozenset({_S.COMPLETED, _S.FAILED, _S.CANCELLED, _S.NEEDS_REVIEW})
#: Statuses a worker may still pick up.
ACTIVE: frozenset[RunStatus] = frozenset({_S.QUEUED, _S.RUNNING, _S.RETRYING})


class IllegalTransition(StoreError):
    """A status change the state machine does not allow (a bug in the caller)."""

    def __init__(
        self,
        run_id: str | None,
        frm: RunStatus | str,
        to: RunStatus | str,
        note: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.from_status = RunStatus(frm)
        self.to_status = RunStatus(to)
        self.legal = LEGAL[self.from_status]
        targets = ", ".join(sorted(s.value for s in self.legal)) or "none (it is final)"
        subject = f"run {run_id}" if run_id is not None else "a run"
        message = (
            f"illegal transition of {subject}: {self.from_status.value} → {self.to_status.value}; "
            f"from {self.from_status.value} it may go to: {targets}"
        )
        if note:
            message += f" ({note})"
        super().__init__(message)


def check_transition(
    frm: RunStatus | str, to: RunStatus | str, *, run_id: str | None = None
) -> None:
    """Raise :class:`IllegalTransition` unless ``frm`` → ``to`` is legal."""
    if RunStatus(to) not in LEGAL[RunStatus(frm)]:
        raise IllegalTransition(run_id, frm, to)


__all__ = ["ACTIVE", "FINISHED", "LEGAL", "IllegalTransition", "check_transition"]
