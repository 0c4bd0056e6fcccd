"""The rows of step attempts and artifacts as :mod:`browserq.store.steps` writes them: one insert
or end at a time, inside the caller's transaction (a retried write first looks for its row)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from browserq.store.models import Artifact, Run, StepAttemptRecord, StepStatus, utcnow

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


__all__ = ["checked_end", "end_values", "insert_artifact_row", "insert_step_row", "save_checkpoint", "step_status"]
