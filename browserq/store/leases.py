"""Run leases: the right to execute a run, held by one worker at a time, with a fencing token.

A worker takes the lease (:meth:`Leases.acquire_lease`), keeps pushing its expiry forward
(:meth:`~Leases.renew_lease`) and gives it back. Writes that pass ``token=`` are refused
with :class:`LeaseLost` once the token is no longer the run's (someone took the run over), so a
worker that was presumed dead cannot overwrite its successor's records. Runs whose lease expired
(or whose message was never sent) are what the sweeper asks for (:meth:`~Leases.stuck_runs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from browserq.errors import StoreError
from browserq.store.clock import db_now
from browserq.store.errors import LeaseBusy, LeaseLost, RunAlreadyFinished
from browserq.store.models import Run, RunStatus, RunTransition
from browserq.store.plumbing import Database
from browserq.store.states import AWAITING, HELD, HELD_VALUES
from browserq.store.transitions import CANCELLED_CODE, Transitions
from browserq.store.views import Lease, RunView, to_view

_AWAITING = sorted(status.value for status in AWAITING)
#: How often acquire_lease asks ``holder_dead`` before giving up on a lease that changes hands.
_MAX_VERDICTS = 10

_Verdicts = dict[tuple[str, int], bool]


def _lease_live(run: Run, now: datetime) -> bool:
    return (
        run.lease_owner is not None
        and run.lease_expires_at is not None
        and run.lease_expires_at > now
    )


@dataclass(frozen=True, slots=True)
class _NeedVerdict:
    """acquire_lease must ask ``holder_dead`` about this holder (outside the transaction)."""

    owner: str
    token: int


@dataclass(frozen=True, slots=True)
class _Finished:
    """The transaction ended the run (committed); raise RunAlreadyFinished afterwards."""

    run: RunView


class Leases:
    """Run leases, checkpoints and the runs the sweeper must see (``store.leases``); taking a run
    (or cancelling an orphan) is a status change through ``transitions``."""

    def __init__(self, db: Database, transitions: Transitions) -> None:
        self.db = db
        self.transitions = transitions

    def acquire_lease(
        self,
        run_id: str,
        *,
        owner: str,
        ttl_s: float,
        holder_dead: Callable[[str], bool] | None = None,
    ) -> Lease:
        """Take the right to execute the run for ``ttl_s`` seconds; race-free across processes.

        * final status (or needs_review) → :class:`RunAlreadyFinished`;
        * another owner's unexpired lease → :class:`LeaseBusy`, unless ``holder_dead(owner)``
          says that worker is gone (asked outside any transaction);
        * otherwise a new lease: token + 1, attempt + 1, status ``running`` (logged). Taking a
          run that was already ``running`` is a takeover (``takeovers`` + 1). A running run whose
          cancellation was requested and whose worker is gone is cancelled instead
          (RunAlreadyFinished).

        Lease and status change are one transaction, and the lease carries the run as that
        transaction left it (``Lease.run``), so an attempt reads the run no second time.
        """
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be positive, got {ttl_s}")
        action = f"acquiring a lease on run {run_id} for {owner}"
        verdicts: _Verdicts = {}

        def body(s: Session, retried: bool) -> Lease | _NeedVerdict | _Finished:
            run = self.db.lock_run(s, run_id)
            if run is None:
                raise StoreError(f"cannot acquire a lease on run {run_id!r}: no such run")
            return self._take_lease(
                s,
                run,
                owner=owner,
                ttl_s=ttl_s,
                retried=retried,
                holder_dead=holder_dead,
                verdicts=verdicts,
            )

        for _ in range(_MAX_VERDICTS):
            result = self.db.tx(action, body, write=True)
            if isinstance(result, Lease):
                return result
            if isinstance(result, _Finished):
                raise RunAlreadyFinished(result.run)
            assert holder_dead is not None
            verdicts[(result.owner, result.token)] = bool(holder_dead(result.owner))
        raise StoreError(f"{action}: the lease kept changing hands; giving up")

    def _take_lease(
        self,
        s: Session,
        run: Run,
        *,
        owner: str,
        ttl_s: float,
        retried: bool,
        holder_dead: Callable[[str], bool] | None,
        verdicts: _Verdicts,
    ) -> Lease | _NeedVerdict | _Finished:
        """One try of acquire_lease on the locked run (see there for the outcomes)."""
        now = db_now(s)
        status = RunStatus(run.status)
        if status.terminal:
            raise RunAlreadyFinished(to_view(RunView, run))
        live = _lease_live(run, now)
        if retried and status is RunStatus.RUNNING and live and run.lease_owner == owner:
            return self._our_earlier_lease(s, run)
        takeover = status in HELD  # running, or waiting for a person on a worker that is gone
        previous = run.lease_owner or run.worker or "an unknown worker"
        why = ""
        if takeover:
            verdict = self._takeover_why(run, owner, live, holder_dead, verdicts, now)
            if isinstance(verdict, _NeedVerdict):
                return verdict
            why = verdict
        if takeover and run.cancel_requested_at is not None:
            return self._cancel_orphan(s, run, owner=owner, previous=previous, now=now)
        reason = f"taken over from {previous} ({why})" if takeover else f"started by {owner}"
        self.transitions.apply(
            s, run, RunStatus.RUNNING, reason=reason, worker=owner, now=now, takeover=takeover
        )
        run.lease_token += 1
        run.lease_owner = owner
        run.lease_expires_at = now + timedelta(seconds=ttl_s)
        run.attempt += 1
        run.started_at = run.started_at or now
        run.heartbeat_at = now
        run.worker = owner
        if takeover:
            run.takeovers += 1
        s.flush()
        return self._lease_of(run, takeover=takeover)

    def _our_earlier_lease(self, s: Session, run: Run) -> Lease:
        """On a retry we already hold the lease: our earlier try committed. Was it a takeover?"""
        last = s.scalars(
            select(RunTransition.reason)
            .where(RunTransition.run_id == run.id)
            .order_by(RunTransition.id.desc())
            .limit(1)
        ).first()
        return self._lease_of(run, takeover=bool(last and last.startswith("taken over")))

    @staticmethod
    def _takeover_why(
        run: Run,
        owner: str,
        live: bool,
        holder_dead: Callable[[str], bool] | None,
        verdicts: _Verdicts,
        now: datetime,
    ) -> str | _NeedVerdict:
        """Why ``owner`` may take the running run over (LeaseBusy if it may not), or the
        question to ask ``holder_dead`` first."""
        if live and run.lease_owner != owner:
            assert run.lease_owner is not None and run.lease_expires_at is not None
            key = (run.lease_owner, run.lease_token)
            if holder_dead is None:
                raise LeaseBusy(run.id, run.lease_owner, run.lease_expires_at, now=now)
            if key not in verdicts:
                return _NeedVerdict(*key)
            if not verdicts[key]:
                raise LeaseBusy(run.id, run.lease_owner, run.lease_expires_at, now=now)
            return "holder dead"
        if live:
            return "re-acquired by its holder"
        if run.lease_owner is None:
            return "lease released" if run.lease_expires_at is not None else "no lease"
        return "lease expired"

    def _cancel_orphan(
        self, s: Session, run: Run, *, owner: str, previous: str, now: datetime
    ) -> _Finished:
        """The run's cancellation was requested and its worker is gone: cancel it now."""
        self.transitions.apply(
            s,
            run,
            RunStatus.CANCELLED,
            reason=f"cancelled: {run.cancel_reason} (its worker {previous} is gone)",
            worker=owner,
            now=now,
            fields={
                "error_code": CANCELLED_CODE,
                "error_message": run.cancel_reason,
            },
        )
        s.flush()
        return _Finished(to_view(RunView, run))

    @staticmethod
    def _lease_of(run: Run, *, takeover: bool) -> Lease:
        assert run.lease_owner is not None and run.lease_expires_at is not None
        return Lease(
            run=to_view(RunView, run),
            run_id=run.id,
            owner=run.lease_owner,
            token=run.lease_token,
            expires_at=run.lease_expires_at,
            attempt=run.attempt,
            takeover=takeover,
            takeovers=run.takeovers,
        )

    def renew_lease(self, run_id: str, *, token: int, ttl_s: float) -> RunView:
        """Push the lease's expiry to now + ``ttl_s`` and record a heartbeat.

        :class:`LeaseLost` when the token is not the run's any more, the lease was released or
        the run is no longer running (or waiting for a person). The returned view carries ``cancel_requested_at``: a
        worker that sees it set should stop and finish the run as cancelled.
        """
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be positive, got {ttl_s}")
        action = f"renewing the lease on run {run_id}"

        def body(s: Session, _retried: bool) -> RunView:
            run = self.db.lock_run(s, run_id)
            if run is None:
                raise StoreError(f"{action}: no such run {run_id!r}")
            if (
                run.lease_token != token
                or run.status not in HELD_VALUES
                or run.lease_owner is None
            ):
                raise LeaseLost(
                    run_id,
                    token,
                    current_token=run.lease_token,
                    holder=run.lease_owner,
                    status=run.status,
                    action=action,
                )
            now = db_now(s)
            run.lease_expires_at = now + timedelta(seconds=ttl_s)
            run.heartbeat_at = now
            s.flush()
            return to_view(RunView, run)

        return self.db.tx(action, body, write=True)

    def renew_leases(self, tokens: Mapping[str, int], *, ttl_s: float) -> dict[str, LeaseSeen]:
        """:meth:`renew_lease` for many runs (run id → fencing token) in one statement and one
        transaction: each run's :class:`LeaseSeen` — ``renewed=False`` where the lease was lost
        (the caller lets that run go), else the cancel requested, if any. One worker process
        renews all the sessions it holds this way (:mod:`browserq.sessions.renewer`)."""
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be positive, got {ttl_s}")
        if not tokens:
            return {}
        return self.db.tx(f"renewing the leases of {len(tokens)} runs",
                          lambda s, _retried: renew_all_in(s, tokens, ttl_s), write=True)

    def release_lease(self, run_id: str, *, token: int) -> None:
        """Give the lease up if ``token`` is still the run's (otherwise do nothing).

        A run released while still ``running`` gets an already-expired lease, so the sweeper or
        another worker can pick it up at once.
        """

        def body(s: Session, _retried: bool) -> None:
            run = self.db.lock_run(s, run_id)
            if run is None or run.lease_token != token:
                return
            run.lease_owner = None
            held = run.status in HELD_VALUES
            run.lease_expires_at = db_now(s) if held else None

        self.db.tx(f"releasing the lease on run {run_id}", body, write=True)

    def save_checkpoint(self, run_id: str, *, token: int, checkpoint: dict[str, Any]) -> None:
        """Store the run's checkpoint (JSON), fenced by the lease token."""
        action = f"saving the checkpoint of run {run_id}"

        def body(s: Session, _retried: bool) -> None:
            self.db.fence(s, run_id, token, action)
            s.execute(
                update(Run)
                .where(Run.id == run_id)
                .values(checkpoint=checkpoint)
                .execution_options(synchronize_session=False)
            )

        self.db.tx(action, body, write=True)

    def database_now(self) -> datetime:
        """The database's clock, which every lease expiry is written in (compare with this)."""
        return self.db.now()

    def stuck_runs(self, *, queued_older_than_s: float, limit: int = 100) -> list[RunView]:
        """Runs that need the sweeper: ``running`` with an expired lease, and ``queued`` or
        ``retrying`` with no task message sent (``enqueued_at``, else ``queued_at``) for longer
        than ``queued_older_than_s``. Oldest first. (Running runs without a lease, started by
        :meth:`start_run`, are never listed: nothing says whether their process is alive.)"""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        waiting_since = func.coalesce(Run.enqueued_at, Run.queued_at)

        def body(s: Session) -> list[RunView]:
            now = db_now(s)  # the database's clock, as every lease was written with it
            cutoff = now - timedelta(seconds=queued_older_than_s)
            query = (
                select(Run)
                .where(
                    or_(
                        and_(Run.status.in_(HELD_VALUES), Run.lease_expires_at < now),
                        and_(Run.status.in_(_AWAITING), waiting_since < cutoff),
                    )
                )
                .order_by(func.coalesce(Run.lease_expires_at, waiting_since), Run.id)
                .limit(limit)
            )
            return [to_view(RunView, r) for r in s.scalars(query)]

        return self.db.read("looking for stuck runs", body)

@dataclass(frozen=True)
class LeaseSeen:
    """What a fenced batch write saw of the run's lease when it renewed it on the way
    (:func:`renew_in`): ``renewed`` (the run is still running under this token: its lease now
    lasts ``ttl_s`` more) and the cancel requested, if any — so the worker's next heartbeat may
    skip a transaction of its own."""

    renewed: bool
    cancel_reason: str | None = None


def renew_in(s: Session, run_id: str, token: int, ttl_s: float) -> LeaseSeen:
    """Renew the lease inside the caller's (fenced) transaction, as :meth:`Leases.renew_lease`
    would, and read the cancel request with it. A run that is no longer running (or whose lease
    was released) is left alone: the heartbeat's own renewal then raises LeaseLost."""
    return renew_all_in(s, {run_id: token}, ttl_s)[run_id]


def renew_all_in(s: Session, tokens: Mapping[str, int], ttl_s: float) -> dict[str, LeaseSeen]:
    """:func:`renew_in` for every run of ``tokens`` (run id → fencing token), in ONE statement:
    a run whose token is no longer its own, that is no longer running (or waiting for a
    person) or whose lease was released is left alone and seen ``renewed=False``."""
    now = db_now(s)
    fenced = or_(*(and_(Run.id == run_id, Run.lease_token == token) for run_id, token in tokens.items()))
    query = (
        update(Run)
        .where(fenced, Run.status.in_(HELD_VALUES), Run.lease_owner.is_not(None))
        .values(lease_expires_at=now + timedelta(seconds=ttl_s), heartbeat_at=now)
        .returning(Run.id, Run.cancel_requested_at, Run.cancel_reason)
        .execution_options(synchronize_session=False)
    )
    seen = {run_id: LeaseSeen(renewed=False) for run_id in tokens}
    for row in s.execute(query):
        reason = None if row.cancel_requested_at is None else str(row.cancel_reason or "cancelled")
        seen[row.id] = LeaseSeen(renewed=True, cancel_reason=reason)
    return seen


__all__ = ["LeaseSeen", "Leases", "renew_all_in", "renew_in"]
