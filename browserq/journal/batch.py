"""The records the journal holds back, and how a batch of them reaches the store: in ONE
transaction (:meth:`browserq.store.steps.Steps.write_steps`), or — when the database refuses that
transaction — one record at a time, so the refused record is found and replaced by a minimal one
that says so (``STORE_WRITE_FAILED``), and every other record is still kept.

The functions here are synchronous: the journal runs them in a thread, one batch at a time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog

from browserq.errors import Codes, StepFailed, StoreError
from browserq.store import LeaseLost, StoreUnavailable
from browserq.store.leases import LeaseSeen
from browserq.store.models import utcnow
from browserq.store.plumbing import first_line
from browserq.store.steps import ArtifactRow, StepEnd, StepRow, Steps

log = structlog.get_logger(__name__)


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


#: Batch writes renew the run's lease at most this often (the journal's heartbeat skips its own
#: renewal after one that is less than FRESH_RENEWAL_S old: see RunJournal.renew_lease).
RENEW_EVERY_S = 0.5


@dataclass
class LeaseWatch:
    """The run's lease as the journal's fenced writes renew it on the way (``ttl_s``): when one
    last did (``time.monotonic()``) and the cancel request one saw — what lets the heartbeat skip
    its own transaction while steps are being written. Written from the writer thread."""

    ttl_s: float
    renewed_at: float | None = None
    cancel_reason: str | None = None

    def due(self) -> bool:
        """Whether the next write should renew: not when one did less than RENEW_EVERY_S ago
        (with ``flush_ms=0`` every record is a write: one lease update per record is waste)."""
        return self.renewed_at is None or time.monotonic() - self.renewed_at >= RENEW_EVERY_S

    def saw(self, lease: LeaseSeen | None) -> None:
        if lease is not None and lease.renewed:
            self.renewed_at = time.monotonic()
            self.cancel_reason = self.cancel_reason or lease.cancel_reason


def write_batch(
    store: Steps, run_id: str, token: int | None, entries: Sequence[Entry], own: Entry | None,
    watch: LeaseWatch | None = None,
) -> StepFailed | None:
    """Write ``entries`` in one transaction; return the ``STORE_WRITE_FAILED`` failure when the
    database refused one of them (LeaseLost and StoreUnavailable are raised as they are).

    ``own``: the durable start the caller is about to act on; it is not written when an earlier
    record was refused (the caller raises instead of dispatching the step). ``watch``: renew the
    run's lease in the same transactions and note what they saw."""
    try:
        _store(store, run_id, token, entries, watch)
        return None
    except (LeaseLost, StoreUnavailable):
        raise
    except StoreError as exc:
        if len(entries) > 1:
            log.warning("a batch of records was refused; writing them one by one",
                        run_id=run_id, records=len(entries), error=first_line(exc))
    refusal: StepFailed | None = None
    for entry in entries:
        if refusal is not None and entry is own:
            continue
        try:
            _store(store, run_id, token, [entry], watch)
        except (LeaseLost, StoreUnavailable):
            raise
        except StoreError as exc:
            replaced = _replace(store, run_id, token, entry, exc)
            refusal = refusal or replaced
    return refusal


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


def _store(
    store: Steps, run_id: str, token: int | None, entries: Sequence[Entry], watch: LeaseWatch | None = None
) -> None:
    """The entries as store records, written together; the ids of new step rows resolved."""
    records, refs = store_records(entries)
    if not records:
        return
    checkpoint = next((e.checkpoint for e in reversed(entries) if e.checkpoint is not None), None)
    written = store.write_steps(run_id, records, token=token, checkpoint=checkpoint,
                                renew_ttl_s=watch.ttl_s if watch is not None and watch.due() else None)
    if watch is not None:
        watch.saw(written.lease)
    for record, index in refs.items():
        record.attempt_id = written.ids[index]


def _replace(store: Steps, run_id: str, token: int | None, entry: Entry, exc: StoreError) -> StepFailed:
    """Replace a refused record by a minimal one that says so; return the failure to raise."""
    record = entry.record
    if entry.artifact is not None or record is None:
        path = (entry.artifact or {}).get("path")
        log.error("artifact record refused", run_id=run_id, artifact=path, error=first_line(exc))
        return StepFailed(Codes.STORE_WRITE_FAILED,
                          f"the database refused the record of artifact {path} ({first_line(exc)})")
    end = entry.end or {"status": "started"}
    had = f"failed with {end['error_code']}" if end.get("error_code") else f"had {end['status']}"
    refused = StepFailed(
        Codes.STORE_WRITE_FAILED,
        f"the database refused the record of step {record.path} ({first_line(exc)}); the step {had}",
    )
    log.error("step record refused", run_id=run_id, step=record.path, error=first_line(exc))
    minimal = {"status": "failed", "error_code": refused.code.code, "error_message": refused.message,
               "retryable": False}
    if record.attempt_id is None:
        record.start = {**record.start, "inputs": {}, "url_before": None}
    _store(store, run_id, token, [Entry(record, start=record.attempt_id is None, end=minimal, finished_at=utcnow())])
    record.refused = True
    return refused


__all__ = ["Entry", "LeaseWatch", "StepRecord", "store_records", "write_batch"]
