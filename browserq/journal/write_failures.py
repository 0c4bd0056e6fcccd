"""When the journal's writes fail.

* A batch the database refused (not an outage, not a lost lease) is written again one record at
  a time (:func:`write_one_by_one`): the refused record is found and replaced by a minimal one
  that says so (``STORE_WRITE_FAILED``) — never a step left ``started`` behind a refusal — and
  every other record is still kept.
* What a write met while no caller waited for it (the background flush, a batch whose writer was
  cancelled) is kept by :class:`WriteFailures` until the call that must raise it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import structlog

from browserq.errors import Codes, StepFailed, StoreError
from browserq.journal.entries import Entry
from browserq.store import LeaseLost, StoreUnavailable
from browserq.store.models import utcnow
from browserq.store.plumbing import first_line

log = structlog.get_logger(__name__)

#: How the journal writes some entries in one transaction (the ids of new step rows resolved).
WriteEntries = Callable[[Sequence[Entry]], None]


def write_one_by_one(write: WriteEntries, run_id: str, entries: Sequence[Entry], own: Entry | None) -> StepFailed | None:
    """Write a refused batch again one record at a time; return the ``STORE_WRITE_FAILED``
    failure of the first refused record (LeaseLost and StoreUnavailable are raised as they are).

    ``own``: the durable start the caller is about to act on; it is not written when an earlier
    record was refused (the caller raises instead of dispatching the step)."""
    refusal: StepFailed | None = None
    for entry in entries:
        if refusal is not None and entry is own:
            continue
        try:
            write([entry])
        except (LeaseLost, StoreUnavailable):
            raise
        except StoreError as exc:
            replaced = _replace(write, run_id, entry, exc)
            refusal = refusal or replaced
    return refusal


def _replace(write: WriteEntries, run_id: str, entry: Entry, exc: StoreError) -> StepFailed:
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
    write([Entry(record, start=record.attempt_id is None, end=minimal, finished_at=utcnow())])
    record.refused = True
    return refused


class WriteFailures:
    """What the journal's writes met that a later call raises: ``lost`` (another worker owns the
    run: every later call raises it) and ``failed`` (what the background flush met)."""

    def __init__(self) -> None:
        self.failed: BaseException | None = None
        self.lost: LeaseLost | None = None

    def note(self, failed: BaseException) -> None:
        """A write no caller waited for met ``failed``: the first such is raised next."""
        self.failed = self.failed or failed

    def take(self, *, barrier: bool) -> StepFailed | None:
        """Like :meth:`raise_pending`, but a refused record is returned, not raised: the caller
        writes its own record first (a step end, a flush), then raises it — so no step is left
        ``started``, and nothing that followed is dropped, behind an earlier step's refusal."""
        try:
            self.raise_pending(barrier=barrier)
        except StepFailed as refused:
            return refused
        return None

    def raise_pending(self, *, barrier: bool) -> None:
        """Raise what a background flush met: a lost lease at every call; an outage at the next
        call; a refused record (STORE_WRITE_FAILED) at the next durable call or flush — the
        barrier the runner handles it at (an artifact call may be evidence, which only logs)."""
        if self.lost is not None:
            raise self.lost
        failed = self.failed
        if failed is None or (isinstance(failed, StepFailed) and not barrier):
            return
        self.failed = None
        raise failed


__all__ = ["WriteEntries", "WriteFailures", "write_one_by_one"]
