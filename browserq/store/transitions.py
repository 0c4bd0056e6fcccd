"""Every status change of a run, checked against the state machine and logged: the generic
:meth:`~Transitions.transition`, a worker starting a run without a lease, and finishing it.

Leaving ``running`` (or ``waiting_for_human``, which is held the same way) ends the lease. When the holder itself does it (it presented the current
token) the token stays, so its own late writes still pass; anyone else (the sweeper, an operator)
bumps the token, which fences the old holder out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from browserq.errors import Codes, StoreError
from browserq.store.clock import db_now
from browserq.store.errors import IllegalTransition
from browserq.store.handoff_rows import close_open_handoff
from browserq.store.models import Run, RunStatus, RunTransition
from browserq.store.plumbing import Database, moved_call, run_status_value
from browserq.store.states import FINISHED, HELD, LEGAL
from browserq.store.views import RunView, TransitionView, to_view
from browserq.store.webhooks import queue_event

if TYPE_CHECKING:
    from browserq.store.step_records import ArtifactRow, StepEnd, StepRow
    from browserq.store.steps import Steps

#: The error code of a run that ends cancelled.
CANCELLED_CODE = Codes.CANCELLED.code

#: Run columns that :meth:`Transitions.transition` may not set through ``fields``.
_PROTECTED_FIELDS = frozenset({"id", "status", "lease_token", "created_at"})
_RUN_COLUMNS = frozenset(c.key for c in Run.__table__.columns)


def check_transition(
    frm: RunStatus | str, to: RunStatus | str, *, run_id: str | None = None
) -> None:
    """Raise :class:`IllegalTransition` unless ``frm`` → ``to`` is legal."""
    if RunStatus(to) not in LEGAL[RunStatus(frm)]:
        raise IllegalTransition(run_id, frm, to)


class Transitions:
    """Run status changes (``store.transitions``), and the step every other repository's status
    change goes through inside its own transaction (:meth:`apply`): the state machine, the
    lease's end, the log row, the webhook event (for ``fleet_notify_url`` too: where the events
    of a run without a notify URL of its own go) and the close of a wait the run leaves. A run's
    end writes its last step records with ``steps`` in the same transaction."""

    if not TYPE_CHECKING:  # the Store's old ``transitions(run_id)``: a clear error (hidden from mypy)
        __call__ = moved_call("transitions")

    def __init__(self, db: Database, steps: Steps, *, fleet_notify_url: str | None = None) -> None:
        self.db = db
        self.steps = steps
        self.fleet_notify_url = fleet_notify_url

    def apply(
        self,
        s: Session,
        run: Run,
        to: RunStatus,
        *,
        reason: str,
        worker: str | None,
        now: datetime,
        fenced: bool = False,
        takeover: bool = False,
        fields: dict[str, Any] | None = None,
    ) -> None:
        """Check and apply ``run.status → to`` and log it (the caller holds the row lock).

        ``fenced``: the lease holder itself does it (see the module docstring).
        """
        frm = RunStatus(run.status)
        if to is frm and not takeover:
            raise IllegalTransition(
                run.id, frm, to, note="only acquire_lease may take over a running run"
            )
        check_transition(frm, to, run_id=run.id)
        if frm is RunStatus.WAITING_FOR_HUMAN:
            close_open_handoff(s, run.id, to, now)
        if frm in HELD and to not in HELD:
            if not fenced:
                run.lease_token += 1
            if to is RunStatus.QUEUED and not fenced:
                # Re-enqueued from under its worker (the sweeper: the lease expired, the worker
                # vanished). That is a lost worker like a takeover: the poison cap counts it.
                run.takeovers += 1
            run.lease_owner = None
            run.lease_expires_at = None
        run.status = to.value
        run.finished_at = now if to in FINISHED else None
        run.status_reason = reason
        for key, value in (fields or {}).items():
            setattr(run, key, value)
        s.add(
            RunTransition(
                run_id=run.id,
                at=now,
                from_status=frm.value,
                to_status=to.value,
                reason=reason,
                worker=worker,
            )
        )
        queue_event(s, run, to, now, fleet_notify_url=self.fleet_notify_url)

    def _already_applied(self, s: Session, run: Run, to: RunStatus, reason: str) -> bool:
        """On a retry: did our earlier, unacknowledged try already make this transition?"""
        if run.status != to.value:
            return False
        last = s.scalars(
            select(RunTransition)
            .where(RunTransition.run_id == run.id)
            .order_by(RunTransition.id.desc())
            .limit(1)
        ).first()
        return last is not None and last.to_status == to.value and last.reason == reason

    def transition(
        self,
        run_id: str,
        to: RunStatus | str,
        *,
        reason: str,
        worker: str | None = None,
        token: int | None = None,
        fields: dict[str, Any] | None = None,
        only_from: Callable[[Run], None] | None = None,
    ) -> RunView:
        """Move the run to ``to`` in one transaction, or raise (and write nothing).

        ``only_from(run)`` may refuse the move by raising, once the row is locked (a resolution
        moves only a run that still waits for it).

        Locks the row, checks the fencing ``token`` when given (:class:`LeaseLost`), checks the
        state machine (:class:`IllegalTransition`), sets the status, ``status_reason`` (=
        ``reason`` unless ``fields`` sets it), ``finished_at`` (final statuses; cleared
        otherwise) and ``fields`` (any other run columns, e.g. outputs or error_code), and
        appends a ``run_transitions`` row.
        """
        target = RunStatus(run_status_value(to))
        bad = set(fields or {}) - (_RUN_COLUMNS - _PROTECTED_FIELDS)
        if bad:
            raise ValueError(f"transition cannot set {sorted(bad)}: not settable run columns")
        action = f"moving run {run_id} to {target.value}"

        def body(s: Session, retried: bool) -> RunView:
            run = self.db.lock_run(s, run_id)
            if run is None:
                raise StoreError(f"{action}: no such run {run_id!r}")
            if retried and self._already_applied(s, run, target, reason):
                return to_view(RunView, run)
            if token is not None:
                self.db.fence_run(run, token, action)
            if only_from is not None:
                only_from(run)
            self.apply(
                s,
                run,
                target,
                reason=reason,
                worker=worker,
                now=db_now(s),
                fenced=token is not None,
                fields=fields,
            )
            s.flush()
            return to_view(RunView, run)

        return self.db.tx(action, body, write=True)

    def transitions(self, run_id: str) -> list[TransitionView]:
        """The run's status history, oldest first (the creation has ``from_status`` None)."""
        query = (
            select(RunTransition).where(RunTransition.run_id == run_id).order_by(RunTransition.id)
        )
        return self.db.read(
            f"reading transitions of run {run_id}",
            lambda s: [to_view(TransitionView, row) for row in s.scalars(query)],
        )

    def start_run(self, run_id: str, *, worker: str) -> RunView:
        """A worker starts (or restarts) the run without a lease (in-process runs): running,
        attempt + 1, heartbeat now. ``started_at`` is set by the first start only.

        Restarting a run that is ``running`` counts as a takeover and revokes any lease on it.
        """
        action = f"starting run {run_id}"

        def body(s: Session, _retried: bool) -> RunView:
            run = self.db.lock_run(s, run_id)
            if run is None:
                raise StoreError(f"cannot start run {run_id!r}: no such run")
            now = db_now(s)
            restart = run.status == RunStatus.RUNNING.value
            if restart:
                reason = (
                    f"restarted by {worker} (was running on {run.worker or 'an unknown worker'})"
                )
            else:
                reason = f"started by {worker}"
            self.apply(
                s, run, RunStatus.RUNNING, reason=reason, worker=worker, now=now, takeover=restart
            )
            if restart:
                run.takeovers += 1
                run.lease_token += 1
                run.lease_owner = None
                run.lease_expires_at = None
            run.attempt += 1
            run.started_at = run.started_at or now
            run.heartbeat_at = now
            run.worker = worker
            s.flush()
            return to_view(RunView, run)

        return self.db.tx(action, body, write=True)

    def finish_run(
        self,
        run_id: str,
        *,
        status: RunStatus | str,
        outputs: dict[str, Any] | None,
        error_code: str | None = None,
        error_message: str | None = None,
        error_step_path: str | None = None,
        token: int | None = None,
        worker: str | None = None,
        reason: str | None = None,
        warnings: list[dict[str, Any]] | None = None,
        steps: Sequence[StepRow | StepEnd | ArtifactRow] = (),
    ) -> None:
        """Move the run to ``status`` (through the state machine) with its outputs and error.

        ``steps``: the journal's last held-back records (see ``Steps.write_steps``), written
        first in the same transaction — a run's end and its last steps cost one commit.

        A final status sets ``finished_at``; a non-final one (e.g. ``retrying``) clears it.
        ``token``: fence the write with the caller's lease. ``worker`` defaults to the run's
        worker; ``reason`` to a summary of the outcome. ``warnings``: where a limit cut the
        result short (stored as NULL when empty).
        """
        target = RunStatus(run_status_value(status))
        if reason is None:
            if error_code or error_message:
                reason = ": ".join(p for p in (error_code, error_message) if p)
            else:
                reason = f"{target.value} by its worker"
        action = f"finishing run {run_id}"

        def body(s: Session, retried: bool) -> None:
            run = self.db.lock_run(s, run_id)
            if run is None:
                raise StoreError(f"cannot finish run {run_id!r}: no such run")
            if retried and self._already_applied(s, run, target, reason):
                return
            if token is not None:
                self.db.fence_run(run, token, action)
            if steps:
                self.steps.write_in(s, retried, steps)
            now = db_now(s)
            self.apply(
                s,
                run,
                target,
                reason=reason,
                worker=worker if worker is not None else run.worker,
                now=now,
                fenced=token is not None,
                fields={
                    "outputs": outputs,
                    "error_code": error_code,
                    "error_message": error_message,
                    "error_step_path": error_step_path,
                    "heartbeat_at": now,
                    "warnings": warnings or None,
                },
            )

        self.db.tx(action, body, write=True)


__all__ = ["CANCELLED_CODE", "Transitions", "check_transition"]
