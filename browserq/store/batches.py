"""Batches: a group of runs of one template, counted by status, with a circuit breaker whose
tripping cancels what is left of the batch."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import exc, func, select, update
from sqlalchemy.orm import Session

from browserq.errors import StoreError
from browserq.store.cancellation import Cancellation
from browserq.store.clock import db_now
from browserq.store.models import Batch, Run, RunStatus, utcnow
from browserq.store.plumbing import Database, changed_rows, run_status_value
from browserq.store.states import ACTIVE, FINISHED
from browserq.store.views import BatchView, RunView, to_view


class Batches:
    """Batches, their counts and circuit breaker (``store.batches``); the rest of a batch is
    cancelled through ``cancellation``."""

    def __init__(self, db: Database, cancellation: Cancellation) -> None:
        self.db = db
        self.cancellation = cancellation

    def create_batch(
        self,
        *,
        batch_id: str,
        template_name: str,
        template_version: str,
        total: int,
        breaker: dict[str, Any] | None = None,
    ) -> None:
        """Record a batch of ``total`` runs (created afterwards with ``create_run(batch_id=)``).

        ``breaker``: e.g. ``{"min_runs": 10, "max_failure_rate": 0.5}``, kept for whoever
        decides to :meth:`trip_breaker`.
        """
        if total < 0:
            raise ValueError(f"total must be >= 0, got {total}")

        def body(s: Session, retried: bool) -> None:
            if retried and s.get(Batch, batch_id) is not None:
                return
            s.add(
                Batch(
                    id=batch_id,
                    template_name=template_name,
                    template_version=template_version,
                    total=total,
                    breaker=breaker,
                    created_at=utcnow(),
                )
            )

        action = f"creating batch {batch_id}"
        try:
            self.db.tx(action, body, write=True, passthrough=(exc.IntegrityError,))
        except exc.IntegrityError as e:
            raise StoreError(f"{action}: a batch with this id already exists") from e

    def _summary(self, s: Session, batch: Batch) -> BatchView:
        counts = {
            status: n
            for status, n in s.execute(
                select(Run.status, func.count())
                .where(Run.batch_id == batch.id)
                .group_by(Run.status)
            )
        }

        def n(status: RunStatus) -> int:
            return int(counts.get(status.value, 0))

        finished = sum(n(status) for status in FINISHED)
        return BatchView(
            id=batch.id,
            template_name=batch.template_name,
            template_version=batch.template_version,
            total=batch.total,
            breaker=batch.breaker,
            created_at=batch.created_at,
            finished_at=batch.finished_at,
            breaker_tripped_at=batch.breaker_tripped_at,
            breaker_reason=batch.breaker_reason,
            queued=n(RunStatus.QUEUED),
            running=n(RunStatus.RUNNING),
            retrying=n(RunStatus.RETRYING),
            completed=n(RunStatus.COMPLETED),
            failed=n(RunStatus.FAILED),
            cancelled=n(RunStatus.CANCELLED),
            needs_review=n(RunStatus.NEEDS_REVIEW),
            finished=finished,
            success_rate=n(RunStatus.COMPLETED) / finished if finished else None,
        )

    def _get_batch(self, s: Session, batch_id: str, action: str, *, lock: bool = False) -> Batch:
        query = select(Batch).where(Batch.id == batch_id)
        batch = s.scalars(self.db.locked(query) if lock else query).one_or_none()
        if batch is None:
            raise StoreError(f"{action}: no such batch {batch_id!r}")
        return batch

    def batch_summary(self, batch_id: str) -> BatchView:
        """The batch with its runs counted by status."""
        action = f"reading batch {batch_id}"
        return self.db.read(action, lambda s: self._summary(s, self._get_batch(s, batch_id, action)))

    def trip_breaker(self, batch_id: str, *, reason: str) -> bool:
        """Mark the batch's circuit breaker tripped; True only for the call that tripped it."""
        action = f"tripping the breaker of batch {batch_id}"

        def body(s: Session, _retried: bool) -> bool:
            result = s.execute(
                update(Batch)
                .where(Batch.id == batch_id, Batch.breaker_tripped_at.is_(None))
                .values(breaker_tripped_at=utcnow(), breaker_reason=reason)
                .execution_options(synchronize_session=False)
            )
            if changed_rows(result) == 1:
                return True
            self._get_batch(s, batch_id, action)  # raises if there is no such batch
            return False

        return self.db.tx(action, body, write=True)

    def cancel_batch_remaining(self, batch_id: str, *, reason: str) -> int:
        """Cancel the batch's queued and retrying runs, request cancellation of its running
        ones; return how many runs this call cancelled or asked to stop."""
        action = f"cancelling the rest of batch {batch_id}"

        def body(s: Session, _retried: bool) -> int:
            self._get_batch(s, batch_id, action)
            runs = s.scalars(
                self.db.locked(
                    select(Run)
                    .where(
                        Run.batch_id == batch_id,
                        Run.status.in_([status.value for status in ACTIVE]),
                    )
                    .order_by(Run.id)
                )
            ).all()
            now = db_now(s)  # a cancellation's time, as every run's transitions have it
            changed = sum(1 for run in runs if self.cancellation.cancel_in(s, run, reason, now))
            s.flush()
            return changed

        return self.db.tx(action, body, write=True)

    def finish_batch_if_done(self, batch_id: str) -> BatchView:
        """Set the batch's ``finished_at`` once all its runs exist (or its breaker tripped) and
        every one is in a final status; return the summary either way."""
        action = f"finishing batch {batch_id}"

        def body(s: Session, _retried: bool) -> BatchView:
            batch = self._get_batch(s, batch_id, action, lock=True)
            summary = self._summary(s, batch)
            active = summary.queued + summary.running + summary.retrying
            all_there = summary.created >= batch.total or batch.breaker_tripped_at is not None
            if batch.finished_at is None and active == 0 and all_there:
                batch.finished_at = utcnow()
                s.flush()
                summary = self._summary(s, batch)
            return summary

        return self.db.tx(action, body, write=True)

    def batch_runs(
        self, batch_id: str, *, statuses: Iterable[RunStatus | str] = ()
    ) -> list[RunView]:
        """The batch's runs, oldest first, optionally only those in ``statuses``."""
        query = select(Run).where(Run.batch_id == batch_id).order_by(Run.created_at, Run.id)
        wanted = [run_status_value(status) for status in statuses]
        if wanted:
            query = query.where(Run.status.in_(wanted))
        return self.db.read(
            f"reading runs of batch {batch_id}",
            lambda s: [to_view(RunView, run) for run in s.scalars(query)],
        )


__all__ = ["Batches"]
