"""The run state machine: which status may follow which.

    queued       → running | cancelled | failed
    running      → completed | failed | cancelled | needs_review | retrying
                   | waiting_for_human  (a handoff: a person is asked to take over)
                   | running  (a takeover: another worker acquires an expired or dead lease)
                   | queued   (re-enqueued by the sweeper)
    waiting_for_human → running   (the handoff's condition was met, or a person pressed
                                   Continue; or a takeover, as for running)
                   | failed      (HUMAN_TIMEOUT, HUMAN_GAVE_UP, or the worker failed)
                   | cancelled
                   | queued      (its worker vanished: re-enqueued by the sweeper)
                   | retrying    (its execution crashed)
    retrying     → running | cancelled | failed | queued
    needs_review → completed | failed | cancelled  (an operator resolves it: ``browserq resolve``)
                   | queued     (resolved as "retry from a step": see browserq.execute.resolve)
    completed, failed, cancelled → nothing

An illegal transition is a bug in the caller: :func:`browserq.store.transitions.check_transition`
raises :class:`~browserq.store.errors.IllegalTransition` and nothing is written. Every legal one
is recorded in ``run_transitions`` by the store. This module is only the table (no imports but the
statuses), so the error can name the legal targets without an import cycle.
"""

from __future__ import annotations

from browserq.store.models import FINISHED_RUN_STATUSES, RunStatus

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
            _S.WAITING_FOR_HUMAN,
        }
    ),
    _S.WAITING_FOR_HUMAN: frozenset(
        {_S.RUNNING, _S.FAILED, _S.CANCELLED, _S.QUEUED, _S.RETRYING}
    ),
    _S.RETRYING: frozenset({_S.RUNNING, _S.CANCELLED, _S.FAILED, _S.QUEUED}),
    _S.NEEDS_REVIEW: frozenset({_S.COMPLETED, _S.FAILED, _S.CANCELLED, _S.QUEUED}),
    _S.COMPLETED: frozenset(),
    _S.FAILED: frozenset(),
    _S.CANCELLED: frozenset(),
}

#: Statuses that set ``finished_at`` (``needs_review`` waits for a person, not for a worker).
FINISHED: frozenset[RunStatus] = FINISHED_RUN_STATUSES
#: Statuses a worker may still pick up.
ACTIVE: frozenset[RunStatus] = frozenset(
    {_S.QUEUED, _S.RUNNING, _S.RETRYING, _S.WAITING_FOR_HUMAN}
)
#: Statuses in which a worker holds the run (its lease, its context, its slot): a run waiting
#: for a person is still held by its worker, which keeps renewing the lease.
HELD: frozenset[RunStatus] = frozenset({_S.RUNNING, _S.WAITING_FOR_HUMAN})
HELD_VALUES: tuple[str, ...] = tuple(sorted(s.value for s in HELD))
#: Statuses of runs waiting for a worker (cancelled at once; swept when their message is lost).
AWAITING: frozenset[RunStatus] = frozenset({_S.QUEUED, _S.RETRYING})


__all__ = ["ACTIVE", "AWAITING", "FINISHED", "HELD", "HELD_VALUES", "LEGAL"]
