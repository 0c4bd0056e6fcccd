"""The run journal: the runner's one door to persistence, one object per run attempt.

The runner and the actions say *what* happened — a step attempt started, finished or was
skipped (with its checkpoint, output and warnings), an artifact was kept, the lease was renewed,
the identity's storage or proxy changed — and never call the store themselves. The journal
decides *when* each record reaches the store.

The durability contract (what the runner may rely on):

* A record passed with ``durable=True`` is in the store when the call returns. The runner asks for
  it where a crash right after must find the record: the start of a side-effect step (before the
  action is dispatched: a redelivered run finds a ``started`` attempt and probes instead of
  re-running it) and every step end that carries a checkpoint (a resumed run continues from it).
* A record passed with ``durable=False`` (the default) — step starts and ends, artifact rows — is
  held back until the next durable record, :meth:`RunJournal.flush`, or at most ``flush_ms``
  (``BROWSERQ_JOURNAL_FLUSH_MS``) after it happened (a background flush); all that is held back
  is written in ONE transaction (:func:`write_batch`, in a thread, one batch at a time:
  :meth:`browserq.store.steps.Steps.write_steps`), together with the durable record that asked
  for it. Records reach the store in the order they happened, so a durable record also makes
  every earlier one durable. A step whose start and end are both held back becomes one finished
  row. Before the runner returns a run's outcome it calls
  :meth:`RunJournal.flush` — or, for a completed run, :meth:`RunJournal.take_tail`: what is held
  back then travels with the outcome and is written in the same transaction as the run's end
  (``RunEnds.finish``), so a short read-only run costs: its record, its lease, its end (plus a
  background batch every ``flush_ms`` and its checkpoints). After ``LeaseLost`` it writes
  nothing more, and what is held back is dropped. ``flush_ms=0``: every record is written when
  it is made.
* A step end that carries a checkpoint is durable whatever the caller passes (the journal
  enforces it): a checkpoint is only worth something once it is stored.
* The lease: every batch write of a leased run also renews the run's lease and reads its cancel
  request (same transaction, the run row is locked by the fence anyway), so
  :meth:`RunJournal.renew_lease` skips its own transaction right after one
  (:mod:`browserq.journal.lease_watch`).
* Calls that return an answer (:meth:`RunJournal.renew_lease`) and the identity's records
  (:meth:`RunJournal.identity_storage`, :meth:`RunJournal.identity_proxy`) always reach the store
  at once: they are fenced by other leases and read by other runs (the identity's next run must
  not start from storage this worker still holds), and they are rare.
* Errors of the store surface from the call that wrote the record — for held-back records, from
  the durable call or flush that wrote them; what the background flush met, from the journal's
  next call (a refusal: its next durable call or flush): ``LeaseLost`` (another worker owns the run: stop writing; every later call raises it),
  ``StoreUnavailable`` (the database is away; that batch is dropped, its steps are redone on
  resume), and ``StepFailed`` with ``STORE_WRITE_FAILED`` when the database refused a record (the
  journal writes the batch again one record at a time and replaces the refused one by a minimal
  record that says so: never a step left ``started`` behind a refusal;
  :mod:`browserq.journal.write_failures`).

The loss window on SIGKILL: the records of at most the last ``flush_ms`` (plus one write), all of
them after the run's last checkpoint and none of them a side effect's start. A resumed run
continues from that checkpoint and redoes those steps anyway; a side effect's start was durable
before it was dispatched, so it is probed, never re-run blindly. While a run is running, readers
of the store (``browserq show``) see its steps up to ``flush_ms`` late.

Secrets never reach the store in clear: the journal redacts every text and value it records with
the run's redactor.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import structlog

from browserq.errors import StepFailed, StoreError
from browserq.journal.entries import Entry, StepRecord, step_end, step_start, store_records
from browserq.journal.handoffs import HandoffRecords
from browserq.journal.lease_watch import LeaseWatch
from browserq.journal.records import RunRecords
from browserq.journal.write_failures import WriteFailures, write_one_by_one
from browserq.redact import Redactor
from browserq.store import IdentityLease, LeaseLost, StoreUnavailable
from browserq.store.artifacts import ArtifactStore, StoredFile
from browserq.store.models import utcnow
from browserq.store.plumbing import first_line
from browserq.store.steps import Steps

log = structlog.get_logger(__name__)


class RunJournal:
    """Everything one run attempt records, in the order it happened (see the module docstring).

    ``flush_ms``: the longest a non-durable record is held back (0: written at once)."""

    def __init__(
        self,
        records: RunRecords,
        artifacts: ArtifactStore,
        *,
        run_id: str,
        run_attempt: int,
        token: int | None,
        redactor: Redactor,
        identity: IdentityLease | None = None,
        flush_ms: int = 0,
        lease_ttl_s: float | None = None,
    ) -> None:
        if flush_ms < 0:
            raise ValueError(f"flush_ms must be >= 0, got {flush_ms}")
        self.records, self.artifacts = records, artifacts
        self.run_id, self.run_attempt = run_id, run_attempt
        self.token = token  # the run lease's fencing token: every write carries it
        self.redactor = redactor
        self.identity = identity
        self.flush_ms = flush_ms
        self.handoffs = HandoffRecords(records.handoffs, run_id=run_id, run_attempt=run_attempt, token=token)  # people's waits
        self._pending: list[Entry] = []
        self._open: dict[StepRecord, Entry] = {}  # held-back starts a step end joins
        self._lock = asyncio.Lock()  # one batch at a time, in order
        self._inflight: asyncio.Future[Any] | None = None  # a batch whose writer was cancelled
        self._timer: asyncio.Task[None] | None = None  # the background flush, while it waits
        self._failures = WriteFailures()  # what the background flush met, raised next
        # Batch writes renew the lease on the way (a leased run's): see renew_lease.
        self._watch = LeaseWatch(lease_ttl_s) if token is not None and lease_ttl_s else None

    @property
    def artifact_base(self) -> Path:
        """The run's folder on this host: trace chunks go there, artifact names are checked on it."""
        return self.artifacts.scratch_dir(self.run_id)

    async def _write(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)  # the store is synchronous: off the loop

    # --- steps ---------------------------------------------------------------------------------
    async def step_started(
        self,
        *,
        path: str,
        step_id: str | None,
        attempt: int,
        action: str,
        inputs: dict[str, Any],
        url_before: str | None,
        durable: bool = False,
    ) -> StepRecord:
        """A step attempt begins. ``durable=True`` before dispatching a side effect."""
        self._failures.raise_pending(barrier=durable)
        start = step_start(self.redactor, run_id=self.run_id, run_attempt=self.run_attempt, path=path,
                           step_id=step_id, attempt=attempt, action=action, inputs=inputs, url_before=url_before)
        record = StepRecord(path, start=start, started_at=utcnow())
        entry = Entry(record, start=True)
        self._open[record] = entry
        await self._add(entry, durable=durable)
        return record

    async def step_finished(
        self,
        record: StepRecord,
        *,
        status: str,
        url_after: str | None,
        failure: StepFailed | None = None, output: Any = None,
        checkpoint: dict[str, Any] | None = None,
        warnings: list[dict[str, Any]] | None = None,
        durable: bool = False, events: list[dict[str, Any]] | None = None,
    ) -> None:
        """A step attempt ended (``succeeded``/``skipped``/``failed``/``unknown``), with the
        checkpoint after it in the same transaction. Always durable when it has a checkpoint.

        A record the database refuses (not an outage, not a lost lease) is replaced by a minimal
        one that says so, and ``StepFailed(STORE_WRITE_FAILED)`` is raised."""
        earlier = self._failures.take(barrier=durable or checkpoint is not None)
        end = step_end(self.redactor, status=status, url_after=url_after, failure=failure, output=output,
                       warnings=warnings, events=events)
        try:
            await self._end(record, end, checkpoint, durable=durable or checkpoint is not None)
        except StepFailed:
            if earlier is None:
                raise
        earlier = earlier or self._failures.take(barrier=durable or checkpoint is not None)
        if earlier is not None:  # an earlier step's refusal, met by a background flush
            raise earlier

    async def _end(self, record: StepRecord, end: dict[str, Any], checkpoint: dict[str, Any] | None,
                   *, durable: bool) -> None:
        held = self._open.pop(record, None)
        if held is not None:  # its start is still held back: one finished row
            held.end, held.finished_at, held.checkpoint = end, utcnow(), checkpoint
            if durable:
                await self._flush()
            return
        await self._add(Entry(record, end=end, finished_at=utcnow(), checkpoint=checkpoint), durable=durable)

    # --- artifacts -----------------------------------------------------------------------------
    async def artifact(
        self, record: StepRecord | None, kind: str, name: str, data: bytes, content_type: str
    ) -> StoredFile:
        """Keep ``data`` as the run's artifact ``name``, linked to the step attempt ``record``.
        The file is written at once (the caller gets its path); its record may be held back (a
        SIGKILL before it is written leaves a file without a row, of a step redone on resume)."""
        self._failures.raise_pending(barrier=False)
        name = self.redactor.text(name)  # a screenshot named after a param
        stored: StoredFile = await self._write(self.artifacts.write, self.run_id, name, data, content_type=content_type)
        fields = dict(
            run_id=self.run_id, kind=str(kind), path=stored.path, content_type=content_type,
            size=stored.size, sha256=stored.sha256,
        )
        await self._add(Entry(record, artifact=fields))
        return stored

    # --- the lease -----------------------------------------------------------------------------
    async def renew_lease(self, ttl_s: float) -> str | None:
        """Renew the run's lease; return the cancel reason when a cancel was requested, else
        None. Raises ``LeaseLost`` when another worker owns the run now. Every batch write of a
        leased run renews the lease and reads the cancel request in its own (fenced) transaction:
        when one did within ``FRESH_RENEWAL_S`` (and a third of the lease: ``LeaseWatch.fresh``),
        this call needs no transaction — it returns what that write saw."""
        assert self.token is not None, "only a leased run renews its lease"
        watch = self._watch
        if watch is None:  # from now on batch writes renew it too
            self._watch = watch = LeaseWatch(ttl_s)
        elif watch.cancel_reason is not None:
            return watch.cancel_reason
        elif watch.fresh(ttl_s):
            return None  # a batch write renewed it (and saw no cancel request) just now
        try:
            view = await self._write(self.records.leases.renew_lease, self.run_id, token=self.token, ttl_s=ttl_s)
        except LeaseLost as exc:
            self._lose(exc)
            raise
        if view.cancel_requested_at is not None:
            return str(view.cancel_reason or "cancelled")
        return None

    # --- the identity --------------------------------------------------------------------------
    async def identity_storage(self, storage_encrypted: str) -> None:
        """The identity's browser storage (encrypted), for its next run. Durable when it returns."""
        assert self.identity is not None
        await self._write(
            self.records.identity_leases.save_identity_storage,
            self.identity.name,
            token=self.identity.token,
            storage_encrypted=storage_encrypted,
        )

    async def identity_proxy(self, proxy_id: str) -> None:
        """The identity got another sticky proxy (its old one is cooling down or gone)."""
        assert self.identity is not None
        await self._write(
            self.records.identity_leases.set_identity_proxy, self.identity.name, token=self.identity.token, proxy_id=proxy_id
        )

    # --- barriers ------------------------------------------------------------------------------
    async def flush(self) -> None:
        """Every record so far is in the store when this returns (in one transaction); raises
        what the store said about any of them, also what a background flush met."""
        self._cancel_timer()
        earlier = self._failures.take(barrier=True)
        try:
            await self._flush()
        except StepFailed:
            if earlier is None:
                raise
        # (also what a background flush that held the lock before this one met)
        earlier = earlier or self._failures.take(barrier=True)
        if earlier is not None:  # a refusal a background flush met: what followed is written too
            raise earlier

    async def take_tail(self) -> list[Entry]:
        """What is still held back, handed to the caller to write with the run's end in one
        transaction (``RunEnds.finish``); nothing is held back afterwards. Like :meth:`flush`,
        it waits for a batch in flight and raises what the store said about earlier records
        (a refusal a background flush met: then the tail is written here, as by flush)."""
        self._cancel_timer()
        async with self._lock:
            await self._settle_inflight()
            if self._failures.failed is None:
                entries, self._pending, self._open = self._pending, [], {}
                return entries
        await self.flush()  # a background batch met a refusal or an outage: raise it as flush does
        return []

    async def _add(self, entry: Entry, *, durable: bool = False) -> None:
        """Hold ``entry`` back, or (durable, or no buffering) write it with all held back."""
        self._pending.append(entry)
        if durable or self.flush_ms == 0:
            await self._flush(own=entry if durable and entry.start else None)
        elif self._timer is None or self._timer.done():
            self._timer = asyncio.get_running_loop().create_task(self._flush_later())

    async def _flush_later(self) -> None:
        """The background flush: what is held back waits at most ``flush_ms``."""
        await asyncio.sleep(self.flush_ms / 1000)
        self._timer = None  # records from now on arm the next one
        try:
            await self._flush()
        except Exception as exc:  # raised by a later call; LeaseLost (fenced out) the task logs at INFO
            (log.debug if isinstance(exc, LeaseLost) else log.warning)("background journal flush failed", run_id=self.run_id, error=str(exc)[:300])
            self._failures.note(exc)

    async def _flush(self, own: Entry | None = None) -> None:
        """Write everything held back in one transaction, one batch at a time, in order."""
        async with self._lock:
            await self._settle_inflight()
            entries, self._pending, self._open = self._pending, [], {}
            if not entries:
                return
            write = asyncio.ensure_future(
                asyncio.to_thread(write_batch, self.records.steps, self.run_id, self.token, entries, own, self._watch)
            )
            try:
                refusal = await asyncio.shield(write)
            except asyncio.CancelledError:  # the thread goes on: the next flush waits for it
                self._inflight = write
                write.add_done_callback(self._note_inflight)
                raise
            except LeaseLost as exc:
                self._lose(exc)
                raise
            except StoreUnavailable:
                log.warning("journal records dropped: the database is unavailable",
                            run_id=self.run_id, records=len(entries))
                raise
        if refusal is not None:
            raise refusal

    def _cancel_timer(self) -> None:
        """A barrier is here: the background flush waiting has nothing left to wait for."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def _settle_inflight(self) -> None:
        """(Under the lock.) Wait for a batch a cancelled writer left being written; raise a lost
        lease: nothing may be written or taken after it."""
        if self._inflight is not None:
            await asyncio.wait([self._inflight])
            self._inflight = None
        if self._failures.lost is not None:
            raise self._failures.lost

    def _note_inflight(self, write: asyncio.Future[Any]) -> None:
        """What a batch written after its writer was cancelled ended with: raised next."""
        if write.cancelled():
            return
        outcome = write.exception() or write.result()  # an error, a refusal, or None
        if isinstance(outcome, LeaseLost):
            self._lose(outcome)
        elif outcome is not None:
            self._failures.note(outcome)

    def _lose(self, exc: LeaseLost) -> None:
        """Another worker owns the run: drop what is held back, write nothing more."""
        self._failures.lost = exc
        self._pending, self._open = [], {}


# --- the batch write (synchronous: run in a thread, one batch at a time) ---------------------------
def write_batch(
    store: Steps, run_id: str, token: int | None, entries: Sequence[Entry], own: Entry | None,
    watch: LeaseWatch | None = None,
) -> StepFailed | None:
    """Write ``entries`` in one transaction; return the ``STORE_WRITE_FAILED`` failure when the
    database refused one of them (LeaseLost and StoreUnavailable are raised as they are).

    ``own``: the durable start the caller is about to act on; it is not written when an earlier
    record was refused (the caller raises instead of dispatching the step). ``watch``: renew the
    run's lease in the same transactions and note what they saw."""
    write = functools.partial(_store, store, run_id, token, watch=watch)
    try:
        write(entries)
        return None
    except (LeaseLost, StoreUnavailable):
        raise
    except StoreError as exc:
        if len(entries) > 1:
            log.warning("a batch of records was refused; writing them one by one",
                        run_id=run_id, records=len(entries), error=first_line(exc))
    return write_one_by_one(write, run_id, entries, own)


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


__all__ = ["RunJournal", "write_batch"]
