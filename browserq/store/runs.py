"""The run record itself: create it (with its first transition), read, list and delete it, and
stamp its heartbeat / enqueue times. Status changes are :mod:`browserq.store.transitions`'."""

from __future__ import annotations

from typing import Any

from sqlalchemy import exc, select, update
from sqlalchemy.orm import Session

from browserq.errors import StoreError
from browserq.store.clock import db_now
from browserq.store.engine import to_store_error
from browserq.store.errors import DuplicateRun
from browserq.store.models import Run, RunStatus, RunTransition, utcnow
from browserq.store.plumbing import Database, changed_rows, run_status_value
from browserq.store.retention import delete_run_rows
from browserq.store.views import RunView, to_view

#: The reason of every run's first transition (from nothing to its first status).
ENQUEUED_REASON = "enqueued"


class Runs:
    """The run record itself (``store.runs``): create, read, list, delete, stamp; its status
    changes are :class:`~browserq.store.transitions.Transitions`'."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def create_run(
        self,
        *,
        run_id: str,
        template_id: int,
        template_name: str,
        template_version: str,
        params: dict[str, Any],
        timeout_s: float,
        status: RunStatus | str = RunStatus.QUEUED,
        task_id: str | None = None,
        queue: str | None = None,
        idempotency_key: str | None = None,
        tenant: str | None = None,
        secrets: str | None = None,
        batch_id: str | None = None,
        status_reason: str | None = None,
        identity: str | None = None,
        identity_pool: str | None = None,
        template_hash: str | None = None,
        enqueued: bool = False,
        human_wait_s: float | None = None,
        notify_url: str | None = None,
    ) -> None:
        """Insert a run and its first transition (from nothing to ``status``, reason "enqueued").

        ``secrets``: the encrypted secret params, never clear text. A reused idempotency key
        raises :class:`DuplicateRun` (a StoreError). ``enqueued``: the caller sends the task
        message right after this (and deletes the run if it cannot): ``enqueued_at`` is set now,
        so no second transaction is needed to stamp it.
        """
        columns: dict[str, Any] = {
            "id": run_id,
            "template_id": template_id,
            "template_name": template_name,
            "template_version": template_version,
            "params": params,
            "status": run_status_value(status),
            "task_id": task_id,
            "queue": queue,
            "idempotency_key": idempotency_key,
            "tenant": tenant,
            "secrets": secrets,
            "timeout_s": timeout_s,
            "batch_id": batch_id,
            "status_reason": status_reason or ENQUEUED_REASON,
            "identity": identity,
            "identity_pool": identity_pool,
            "template_hash": template_hash,
            "enqueued_at": utcnow() if enqueued else None,
            "human_wait_s": human_wait_s or None,
            "notify_url": notify_url,
        }

        def insert(s: Session, retried: bool) -> None:
            if retried and self._created_earlier(s, columns):
                return  # our earlier try committed
            self._insert_run(s, columns)

        action = f"creating run {run_id}"
        try:
            self.db.tx(action, insert, write=True, passthrough=(exc.IntegrityError,))
        except exc.IntegrityError as e:
            raise self._refused_run(e, run_id, idempotency_key, action) from e

    @staticmethod
    def _created_earlier(s: Session, columns: dict[str, Any]) -> bool:
        """On a retry: is the run there already, as our earlier (unacknowledged) try wrote it?"""
        existing = s.get(Run, columns["id"])
        return (
            existing is not None
            and existing.template_id == columns["template_id"]
            and existing.idempotency_key == columns["idempotency_key"]
            and existing.params == columns["params"]
        )

    @staticmethod
    def _insert_run(s: Session, columns: dict[str, Any]) -> None:
        """The new run row (no attempt, no lease yet) and its first transition."""
        now = db_now(s)  # queued_at is compared with the database's clock (stuck_runs)
        s.add(
            Run(
                **{**columns, "enqueued_at": now if columns["enqueued_at"] else None},
                attempt=0,
                queued_at=now,
                created_at=now,
                lease_token=0,
                takeovers=0,
            )
        )
        s.flush()  # the run row first: the transition references it
        s.add(
            RunTransition(
                run_id=columns["id"],
                at=now,
                from_status=None,
                to_status=columns["status"],
                reason=ENQUEUED_REASON,
                worker=None,
            )
        )

    def _refused_run(
        self, error: exc.IntegrityError, run_id: str, idempotency_key: str | None, action: str
    ) -> StoreError:
        """What a refused insert means: DuplicateRun when another run has the key."""
        if idempotency_key is not None:
            existing_run = self.find_run_by_idempotency_key(idempotency_key)
            if existing_run is not None and existing_run.id != run_id:
                return DuplicateRun(idempotency_key, existing_run.id)
        return to_store_error(error, self.db.url, action)

    def get_run(self, run_id: str) -> RunView | None:
        def read(s: Session) -> RunView | None:
            run = s.get(Run, run_id)
            return None if run is None else to_view(RunView, run)

        return self.db.read(f"reading run {run_id}", read)

    def find_run_by_idempotency_key(self, idempotency_key: str) -> RunView | None:
        def read(s: Session) -> RunView | None:
            run = s.scalar(select(Run).where(Run.idempotency_key == idempotency_key))
            return None if run is None else to_view(RunView, run)

        return self.db.read("looking up an idempotency key", read)

    def heartbeat(self, run_id: str) -> None:
        """Record that the worker running ``run_id`` is alive."""
        self._stamp(run_id, "heartbeat_at", "heartbeat")

    def mark_enqueued(self, run_id: str) -> None:
        """Record that a task message was just sent for the run (``enqueued_at`` = now)."""
        self._stamp(run_id, "enqueued_at", "mark enqueued")

    def _stamp(self, run_id: str, column: str, what: str) -> None:
        """Set one timestamp column of a run to now (StoreError for an unknown run)."""

        def body(s: Session, _retried: bool) -> None:
            result = s.execute(
                update(Run)
                .where(Run.id == run_id)
                .values({column: db_now(s)})
                .execution_options(synchronize_session=False)
            )
            if changed_rows(result) == 0:
                raise StoreError(f"cannot {what} run {run_id!r}: no such run")

        self.db.tx(f"{what} of run {run_id}", body, write=True)

    def delete_run(self, run_id: str) -> None:
        """Delete a run and every row about it, whatever its status (no-op if absent): the undo of
        a run accepted but not sent. Its files are the caller's (``discard_input_files``); to
        delete finished runs with their files and results, see :mod:`browserq.execute.retention`."""
        def body(s: Session, _retried: bool) -> None:
            delete_run_rows(s, [run_id])

        self.db.tx(f"deleting run {run_id}", body, write=True)

    def list_runs(
        self, *, limit: int = 20, status: RunStatus | str | None = None, template: str | None = None
    ) -> list[RunView]:
        """The newest runs first, optionally of one status and/or one template name."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        query = select(Run).order_by(Run.created_at.desc(), Run.id.desc()).limit(limit)
        if status is not None:
            query = query.where(Run.status == run_status_value(status))
        if template is not None:
            query = query.where(Run.template_name == template)
        return self.db.read(
            "listing runs", lambda s: [to_view(RunView, run) for run in s.scalars(query)]
        )

    def run_ids_starting_with(self, prefix: str, *, limit: int = 5) -> list[str]:
        """Run ids that begin with ``prefix`` (so people can type a short id)."""
        cleaned = prefix.strip().lower().replace("-", "")  # a dashed UUID pasted whole is fine
        if not cleaned or any(ch not in "0123456789abcdef" for ch in cleaned):
            return []  # "nope" is no run id: never the runs that start with its one hex letter
        query = select(Run.id).where(Run.id.startswith(cleaned)).order_by(Run.id).limit(limit)
        return self.db.read("looking up a run id", lambda s: list(s.scalars(query)))


__all__ = ["ENQUEUED_REASON", "Runs"]
