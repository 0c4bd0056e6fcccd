"""Retention: find the finished runs older than a cutoff and delete each with every row about it.

Deletes go in small batches (one short transaction per batch), so a prune of a million runs never
holds a long lock. Every table with a ``run_id`` column (found from the metadata, so a new table
is never forgotten) loses the batch's rows, children first, and a ``batches`` row goes with its
last run; the database's cascades are not
relied on (SQLite enforces them only with ``foreign_keys=ON``). A run that left its finished
status in between (a review reopened, a resume) is not deleted: the ``DELETE`` re-checks it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Table, and_, delete, or_, select, update
from sqlalchemy.orm import Session

from browserq.store import human_models  # noqa: F401  (its tables must be in the metadata)
from browserq.store.models import Artifact, Base, Batch, Identity, Run, RunStatus
from browserq.store.plumbing import Database, changed_rows

#: What retention may delete: a run that will not run again and asks nobody for anything.
#: ``needs_review`` is finished but waits for a person's decision: never pruned.
PRUNABLE_STATUSES: frozenset[RunStatus] = frozenset(
    {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED}
)


@dataclass(frozen=True)
class PrunableRun:
    """A run retention may delete, with what it leaves outside the database."""

    id: str
    status: str
    task_id: str | None
    finished_at: datetime
    artifact_paths: tuple[str, ...]
    artifact_bytes: int


def run_tables() -> list[Table]:
    """Every table that holds rows about one run, children before parents, ``runs`` last."""
    tables = [t for t in Base.metadata.sorted_tables if "run_id" in t.c and t.name != "runs"]
    return [*reversed(tables), Base.metadata.tables["runs"]]


def _child_tables(table: Table) -> Iterable[Table]:
    """Tables hanging off ``table`` by a foreign key without a ``run_id`` of their own."""
    for other in Base.metadata.sorted_tables:
        if "run_id" not in other.c and any(fk.column.table is table for fk in other.foreign_keys):
            yield other


def delete_run_rows(s: Session, ids: Sequence[str]) -> int:
    """Delete every row about the runs ``ids`` (children first, ``runs`` last); the rows deleted."""
    rows = 0
    batches = set(s.scalars(select(Run.batch_id).where(Run.id.in_(ids), Run.batch_id.is_not(None))))
    for table in run_tables():
        key = table.c.id if table.name == "runs" else table.c.run_id
        for child in _child_tables(table):
            fk = next(fk for fk in child.foreign_keys if fk.column.table is table)
            parents = select(table.c.id).where(key.in_(ids)).scalar_subquery()
            rows += changed_rows(s.execute(delete(child).where(fk.parent.in_(parents)))) or 0
        rows += changed_rows(s.execute(delete(table).where(key.in_(ids)))) or 0
    s.execute(update(Identity).where(Identity.lease_run_id.in_(ids)).values(lease_run_id=None))
    if batches:  # a batch whose last run went: nothing points at it any more
        left = select(Run.id).where(Run.batch_id == Batch.id).exists()
        rows += changed_rows(s.execute(delete(Batch).where(Batch.id.in_(batches), ~left))) or 0
    return rows


class Retention:
    """Finished runs found and deleted with every row about them (``store.retention``)."""

    def __init__(self, db: Database) -> None:
        self.db = db
    def prunable_runs(
        self,
        *,
        finished_before: datetime,
        statuses: Iterable[RunStatus | str],
        limit: int,
        after: tuple[datetime, str] | None = None,
    ) -> list[PrunableRun]:
        """Up to ``limit`` runs in ``statuses`` that finished before ``finished_before``, oldest
        first; ``after``: the (finished_at, id) of the last one of the previous page."""
        wanted = sorted(
            {RunStatus(s).value for s in statuses} & {s.value for s in PRUNABLE_STATUSES}
        )
        query = (
            select(Run.id, Run.status, Run.task_id, Run.finished_at)
            .where(Run.status.in_(wanted), Run.finished_at < finished_before)
            .order_by(Run.finished_at, Run.id)
            .limit(limit)
        )
        if after is not None:  # keyset paging: a dry run over a million runs stays linear
            query = query.where(
                or_(
                    Run.finished_at > after[0], and_(Run.finished_at == after[0], Run.id > after[1])
                )
            )

        def body(s: Session) -> list[PrunableRun]:
            rows = list(s.execute(query))
            ids = [row.id for row in rows]
            files: dict[str, list[tuple[str, int]]] = {run_id: [] for run_id in ids}
            if ids:
                for run_id, path, size in s.execute(
                    select(Artifact.run_id, Artifact.path, Artifact.size).where(
                        Artifact.run_id.in_(ids)
                    )
                ):
                    files[run_id].append((path, size or 0))
            return [
                PrunableRun(
                    row.id,
                    row.status,
                    row.task_id,
                    row.finished_at,
                    tuple(p for p, _ in files[row.id]),
                    sum(n for _, n in files[row.id]),
                )
                for row in rows
            ]

        return self.db.read("finding runs to prune", body)

    def delete_finished_runs(self, run_ids: Sequence[str]) -> tuple[list[str], int]:
        """Delete these runs (those still prunable) and every row about them, in one transaction.

        Returns the ids deleted and the number of rows deleted in all tables.
        """

        def body(s: Session, _retried: bool) -> tuple[list[str], int]:
            if not run_ids:
                return [], 0
            locked = self.db.locked(
                select(Run.id).where(
                    Run.id.in_(list(run_ids)),
                    Run.status.in_([st.value for st in PRUNABLE_STATUSES]),
                )
            )
            ids = list(s.scalars(locked))
            if not ids:
                return [], 0
            return ids, delete_run_rows(s, ids)

        return self.db.tx(f"pruning {len(run_ids)} runs", body, write=True)


__all__ = ["PRUNABLE_STATUSES", "PrunableRun", "Retention", "delete_run_rows", "run_tables"]
