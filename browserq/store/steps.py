"""What a run attempt recorded: its step attempts (started, finished, skipped, interrupted) and the
artifact rows (screenshots, DOM, traces) that point at files in the artifacts directory — the
repository (:class:`Steps`) and, below it, how each row is written inside the caller's
transaction.

Every write may be fenced with the run's lease ``token``; a retried write first looks for the row
its earlier, unacknowledged try may have committed. The records a write is handed are
:mod:`browserq.store.step_records`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from browserq.errors import Codes, StoreError
from browserq.store.leases import renew_in
from browserq.store.models import Artifact, Run, StepAttemptRecord, StepStatus, utcnow
from browserq.store.plumbing import Database, changed_rows, moved_call
from browserq.store.step_records import ArtifactRow, StepEnd, StepRow, StepStart, WrittenSteps
from browserq.store.views import ArtifactView, StepView, to_view

WORKER_LOST_CODE = Codes.WORKER_LOST.code
WORKER_LOST_MESSAGE = "the worker stopped before this step reported a result"


class Steps:
    """Step attempts and artifact rows (``store.steps``)."""

    if not TYPE_CHECKING:  # the Store's old ``steps(run_id)``: a clear error (hidden from mypy)
        __call__ = moved_call("steps")

    def __init__(self, db: Database) -> None:
        self.db = db

    def start_step(self, **step: Unpack[StepStart]) -> int:
        """Append a ``started`` step attempt; return its id for :meth:`finish_step`."""
        return self._insert_step(**step, status=StepStatus.STARTED)

    def record_skipped_step(self, *, reason: str, **step: Unpack[StepStart]) -> int:
        """Append one finished ``skipped`` row; ``reason`` is kept in ``error_message``."""
        return self._insert_step(**step, status=StepStatus.SKIPPED, reason=reason)

    def _insert_step(
        self,
        *,
        status: StepStatus,
        token: int | None = None,
        reason: str | None = None,
        **columns: Any,
    ) -> int:
        run_id = columns["run_id"]
        action = f"recording step {columns['step_path']} of run {run_id}"

        def body(s: Session, retried: bool) -> int:
            if token is not None:
                self.db.fence(s, run_id, token, action)
            return insert_step_row(s, retried, columns, status=status, reason=reason)

        return self.db.tx(action, body, write=True)

    def finish_step(
        self,
        step_attempt_id: int,
        *,
        status: StepStatus | str,
        url_after: str | None,
        output: Any = None,
        error_code: str | None = None,
        error_message: str | None = None,
        retryable: bool | None = None,
        token: int | None = None,
        checkpoint: dict[str, Any] | None = None,
        warnings: list[dict[str, Any]] | None = None,
        events: list[dict[str, Any]] | None = None,
    ) -> None:
        """Move a ``started`` attempt to its final status; sets ``finished_at`` and ``duration_ms``.

        ``warnings``: ``[{code, message}]`` when the step succeeded but a limit cut it short.

        ``checkpoint``: also store the run's checkpoint, in the same transaction (so a step is
        never recorded as done without the checkpoint that covers it, nor the other way round).
        """
        action = f"finishing step attempt {step_attempt_id}"
        fields = checked_end(dict(
            status=status, url_after=url_after, output=output, error_code=error_code,
            error_message=error_message, retryable=retryable, warnings=warnings, events=events,
        ))

        def body(s: Session, retried: bool) -> None:
            self._finish_step_row(s, retried, step_attempt_id, fields, token=token, checkpoint=checkpoint)

        self.db.tx(action, body, write=True)

    def _finish_step_row(
        self,
        s: Session,
        retried: bool,
        step_attempt_id: int,
        fields: dict[str, Any],
        *,
        token: int | None = None,
        checkpoint: dict[str, Any] | None = None,
        now: datetime | None = None,
    ) -> None:
        """The body of :meth:`finish_step` (``fields``: its keyword arguments, status checked)."""
        final = fields["status"]
        query = select(StepAttemptRecord.run_id, StepAttemptRecord.started_at, StepAttemptRecord.status)
        found = s.execute(query.where(StepAttemptRecord.id == step_attempt_id)).one_or_none()
        if found is None:
            raise StoreError(f"cannot finish step attempt {step_attempt_id}: no such attempt")
        if token is not None:
            self.db.fence(s, found.run_id, token, f"finishing step attempt {step_attempt_id}")
        if retried and found.status == final.value:
            return  # our earlier try committed
        now = now or utcnow()
        duration_ms = max(0.0, (now - found.started_at).total_seconds() * 1000.0)
        result = s.execute(
            update(StepAttemptRecord)
            .where(
                StepAttemptRecord.id == step_attempt_id,
                StepAttemptRecord.status == StepStatus.STARTED.value,
            )
            .values(**end_values(fields), finished_at=now, duration_ms=duration_ms)
            .execution_options(synchronize_session=False)
        )
        if changed_rows(result) == 0:
            raise StoreError(f"cannot finish step attempt {step_attempt_id}: it is already finished")
        if checkpoint is not None:
            save_checkpoint(s, found.run_id, checkpoint)

    def write_steps(
        self,
        run_id: str,
        records: Sequence[StepRow | StepEnd | ArtifactRow],
        *,
        token: int | None = None,
        checkpoint: dict[str, Any] | None = None,
        renew_ttl_s: float | None = None,
    ) -> WrittenSteps:
        """Write several records of one run in ONE transaction, in order: the journal's held-back
        step starts and ends and artifact rows (one commit instead of one per record), and the
        run's ``checkpoint`` with them. Returns each record's row id (a :class:`StepEnd`'s is
        its step attempt's). All or nothing: a refused record refuses the whole batch.

        ``renew_ttl_s`` (with ``token``): also renew the run's lease and read its cancel request
        in the same transaction (the row is locked by the fence anyway): a running run's
        heartbeat then needs no transaction of its own while its steps are being written."""
        action = f"recording {len(records)} step and artifact records of run {run_id}"

        def body(s: Session, retried: bool) -> WrittenSteps:
            if token is not None:
                self.db.fence(s, run_id, token, action)
            ids = self.write_in(s, retried, records)
            if checkpoint is not None:
                save_checkpoint(s, run_id, checkpoint)
            renewed = renew_in(s, run_id, token, renew_ttl_s) if token is not None and renew_ttl_s else None
            return WrittenSteps(ids, renewed)

        return self.db.tx(action, body, write=True)

    def write_in(
        self, s: Session, retried: bool, records: Sequence[StepRow | StepEnd | ArtifactRow]
    ) -> list[int | None]:
        """(Inside the caller's transaction: a run's end writes its last steps with it.) The
        records, in order; their row ids."""
        ids: list[int | None] = []
        for record in records:
            if isinstance(record, StepRow):
                end = checked_end(record.end) if record.end is not None else None
                ids.append(insert_step_row(
                    s, retried, record.start, status=StepStatus.STARTED, at=record.started_at,
                    end=end, finished_at=record.finished_at,
                ))
            elif isinstance(record, StepEnd):
                self._finish_step_row(
                    s, retried, record.step_attempt_id, checked_end(record.end), now=record.finished_at
                )
                ids.append(record.step_attempt_id)
            else:
                step = record.step_attempt_id if record.step_ref is None else ids[record.step_ref]
                ids.append(insert_artifact_row(s, retried, {**record.fields, "step_attempt_id": step}))
        return ids

    def mark_interrupted_steps(self, run_id: str, *, before_attempt: int) -> list[StepView]:
        """Step attempts left ``started`` by run attempts before ``before_attempt`` (their worker
        died) become ``unknown`` with error WORKER_LOST; returns them (now unknown)."""
        action = f"marking interrupted steps of run {run_id}"

        def body(s: Session, retried: bool) -> list[StepView]:
            self.db.lock_run(s, run_id)  # runs before steps, like every fenced write
            statuses = [StepStatus.STARTED.value]
            if retried:  # our earlier try may have committed: return its rows too
                statuses.append(StepStatus.UNKNOWN.value)
            rows = list(
                s.scalars(
                    select(StepAttemptRecord)
                    .where(
                        StepAttemptRecord.run_id == run_id,
                        StepAttemptRecord.run_attempt < before_attempt,
                        StepAttemptRecord.status.in_(statuses),
                        or_(
                            StepAttemptRecord.status == StepStatus.STARTED.value,
                            StepAttemptRecord.error_code == WORKER_LOST_CODE,
                        ),
                    )
                    .order_by(StepAttemptRecord.id)
                )
            )
            for row in rows:
                row.status = StepStatus.UNKNOWN.value
                row.error_code = WORKER_LOST_CODE
                row.error_message = WORKER_LOST_MESSAGE
            s.flush()
            return [to_view(StepView, row) for row in rows]

        return self.db.tx(action, body, write=True)

    def steps(self, run_id: str) -> list[StepView]:
        """Every step attempt of the run, in the order they were recorded."""
        query = select(StepAttemptRecord).where(StepAttemptRecord.run_id == run_id).order_by(StepAttemptRecord.id)
        return self.db.read(
            f"reading steps of run {run_id}",
            lambda s: [to_view(StepView, row) for row in s.scalars(query)],
        )

    # --- artifacts ----------------------------------------------------------------------------
    def add_artifact(
        self,
        *,
        run_id: str,
        step_attempt_id: int | None,
        kind: str,
        path: str,
        content_type: str,
        size: int,
        sha256: str,
        token: int | None = None,
    ) -> int:
        """Record a file already written under the artifacts dir (``path`` relative to it)."""
        action = f"recording artifact {path} of run {run_id}"

        fields = dict(
            run_id=run_id, step_attempt_id=step_attempt_id, kind=str(kind), path=path,
            content_type=content_type, size=size, sha256=sha256,
        )

        def body(s: Session, retried: bool) -> int:
            if token is not None:
                self.db.fence(s, run_id, token, action)
            return insert_artifact_row(s, retried, fields)

        return self.db.tx(action, body, write=True)

    def artifacts(self, run_id: str) -> list[ArtifactView]:
        """Every artifact row of the run, in the order they were recorded."""
        query = select(Artifact).where(Artifact.run_id == run_id).order_by(Artifact.id)
        return self.db.read(
            f"reading artifacts of run {run_id}",
            lambda s: [to_view(ArtifactView, row) for row in s.scalars(query)],
        )


# --- the rows, one at a time inside the caller's transaction -------------------------------
_FINAL_STEP_STATUSES = frozenset(
    {StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.UNKNOWN}
)


def step_status(status: StepStatus | str) -> StepStatus:
    try:
        return StepStatus(status)
    except ValueError:
        allowed = ", ".join(s.value for s in StepStatus)
        raise ValueError(f"unknown step status {status!r}; expected one of {allowed}") from None


def insert_step_row(
    s: Session,
    retried: bool,
    columns: dict[str, Any],
    *,
    status: StepStatus,
    reason: str | None = None,
    at: datetime | None = None,
    end: dict[str, Any] | None = None,
    finished_at: datetime | None = None,
) -> int:
    """Insert one step attempt row (``end``: already finished); a retried write returns the row
    its earlier try committed."""
    if retried:
        # (run, run attempt, step path, step attempt) names one step execution.
        earlier = s.scalar(
            select(StepAttemptRecord.id)
            .where(
                StepAttemptRecord.run_id == columns["run_id"],
                StepAttemptRecord.run_attempt == columns["run_attempt"],
                StepAttemptRecord.step_path == columns["step_path"],
                StepAttemptRecord.attempt == columns["attempt"],
            )
            .order_by(StepAttemptRecord.id.desc())
            .limit(1)
        )
        if earlier is not None:
            return earlier
    now = at or utcnow()
    row = StepAttemptRecord(**columns, status=status.value, started_at=now)
    if status is StepStatus.SKIPPED:
        row.finished_at = now
        row.duration_ms = 0.0
        row.url_after = columns["url_before"]
        row.error_message = reason
    if end is not None:
        done = finished_at or now
        for name, value in end_values(end).items():
            setattr(row, name, value)
        row.finished_at = done
        row.duration_ms = max(0.0, (done - now).total_seconds() * 1000.0)
    s.add(row)
    s.flush()
    return row.id


def checked_end(end: dict[str, Any]) -> dict[str, Any]:
    """``end`` with its status checked: a final one (a ValueError otherwise)."""
    final = step_status(end["status"])
    if final not in _FINAL_STEP_STATUSES:
        raise ValueError(f"a step end needs a final status, got {final.value!r}")  # finish_step's too
    return {**end, "status": final}


_END_COLUMNS = ("url_after", "output", "error_code", "error_message", "retryable")


def end_values(fields: dict[str, Any]) -> dict[str, Any]:
    """The columns a step end sets (its timestamps aside)."""
    ended = {name: fields.get(name) for name in _END_COLUMNS}
    return {
        "status": fields["status"].value, **ended,
        "warnings": fields.get("warnings") or None, "events": fields.get("events") or None,
    }


def save_checkpoint(s: Session, run_id: str, checkpoint: dict[str, Any]) -> None:
    query = update(Run).where(Run.id == run_id).values(checkpoint=checkpoint)
    s.execute(query.execution_options(synchronize_session=False))


def insert_artifact_row(s: Session, retried: bool, fields: dict[str, Any]) -> int:
    """Insert one artifact row; a retried write returns the row its earlier try committed."""
    if retried:
        earlier = s.scalar(
            select(Artifact.id)
            .where(
                Artifact.run_id == fields["run_id"],
                Artifact.path == fields["path"],
                Artifact.sha256 == fields["sha256"],
                Artifact.kind == fields["kind"],
            )
            .order_by(Artifact.id.desc())
            .limit(1)
        )
        if earlier is not None:
            return earlier
    row = Artifact(**fields, created_at=utcnow())
    s.add(row)
    s.flush()
    return int(row.id)


__all__ = [
    "WORKER_LOST_CODE",
    "WORKER_LOST_MESSAGE",
    "ArtifactRow",
    "StepEnd",
    "StepRow",
    "Steps",
    "WrittenSteps",
]
