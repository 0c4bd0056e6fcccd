"""What the journal holds back, and what the store is handed for it.

A :class:`StepRecord` is a step attempt the journal knows of (what its end and its artifacts
refer to); an :class:`Entry` is one record held back until the next write, its start and end as
:func:`step_start` and :func:`step_end` make them (redacted: secrets never reach the store in
clear). :func:`store_records` turns a batch of entries into the store's records
(:mod:`browserq.store.step_records`), for the journal's batch writes and for the run's end,
which writes the last of them with it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from browserq.errors import StepFailed
from browserq.recordable import dumps
from browserq.redact import Redactor
from browserq.store.models import utcnow
from browserq.store.step_records import ArtifactRow, StepEnd, StepRow

#: Step outputs larger than this are stored in the step record as a summary only.
MAX_RECORDED_OUTPUT_BYTES = 256 * 1024


@dataclass(eq=False)
class StepRecord:
    """A step attempt the journal knows about: what later records (its end, its artifacts) refer
    to. Opaque to the runner. ``attempt_id`` is the store's id once the step's row is written
    (None while its start is held back): the journal resolves it when it writes."""

    path: str
    attempt_id: int | None = None
    start: dict[str, Any] = field(default_factory=dict, repr=False)  # StepStart's fields, redacted
    started_at: datetime = field(default_factory=utcnow, repr=False)
    refused: bool = field(default=False, repr=False)  # replaced by a STORE_WRITE_FAILED record


@dataclass(eq=False)
class Entry:
    """One record held back: a step's start (``start``; with its end once that happened too), a
    step's end, or an artifact row (``artifact``, linked to ``record`` when it has one)."""

    record: StepRecord | None
    start: bool = False
    end: dict[str, Any] | None = None
    finished_at: datetime | None = None
    checkpoint: dict[str, Any] | None = None
    artifact: dict[str, Any] | None = None


def store_records(entries: Sequence[Entry]) -> tuple[list[StepRow | StepEnd | ArtifactRow], dict[StepRecord, int]]:
    """The entries as the store's records, and where each new step row is among them."""
    records: list[StepRow | StepEnd | ArtifactRow] = []
    refs: dict[StepRecord, int] = {}
    for entry in entries:
        record = entry.record
        if entry.artifact is not None:
            linked = record.attempt_id if record is not None else None
            ref = refs.get(record) if record is not None and linked is None else None
            records.append(ArtifactRow(entry.artifact, step_attempt_id=linked, step_ref=ref))
        elif record is None or (record.refused and not entry.start):
            continue  # the end of a step already replaced by its refusal record
        elif entry.start or record.attempt_id is None:  # (a start lost with an outage: one row now)
            refs[record] = len(records)
            records.append(StepRow(record.start, record.started_at, entry.end, entry.finished_at))
        else:
            assert entry.end is not None and entry.finished_at is not None
            records.append(StepEnd(record.attempt_id, entry.end, entry.finished_at))
    return records, refs


def step_start(redactor: Redactor, *, run_id: str, run_attempt: int, path: str, step_id: str | None,
               attempt: int, action: str, inputs: dict[str, Any], url_before: str | None) -> dict[str, Any]:
    """A step attempt's start as its record holds it (``StepStart``'s fields, redacted)."""
    return dict(
        run_id=run_id, run_attempt=run_attempt, step_path=path, step_id=step_id, attempt=attempt, action=action,
        inputs=redactor.data(inputs), url_before=redactor.text(url_before) if url_before is not None else None,
    )


def step_end(redactor: Redactor, *, status: str, url_after: str | None, failure: StepFailed | None, output: Any,
             warnings: list[dict[str, Any]] | None, events: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A step attempt's end as its record holds it (``finish_step``'s fields, redacted; a large
    output summarised)."""
    return dict(
        status=status,
        url_after=redactor.text(url_after) if url_after is not None else None,
        output=recordable(redactor.data(output)),
        error_code=failure.code.code if failure else None,
        error_message=redactor.text(failure.message) if failure else None,
        retryable=failure.retryable if failure else None,
        warnings=warnings, events=redactor.data(events) if events else None,
    )


def recordable(value: Any) -> Any:
    """What the step record keeps of an output: the value, or a summary when it is large (the
    run's outputs hold it whole, within BROWSERQ_MAX_RUN_OUTPUT_BYTES)."""
    if value is None:
        return None
    encoded = dumps(value)
    if len(encoded) <= MAX_RECORDED_OUTPUT_BYTES:
        return json.loads(encoded)
    return {"truncated": True, "bytes": len(encoded), "type": type(value).__name__}


__all__ = ["MAX_RECORDED_OUTPUT_BYTES", "Entry", "StepRecord", "recordable", "step_end", "step_start", "store_records"]
