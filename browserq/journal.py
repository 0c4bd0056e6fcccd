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
* A record passed with ``durable=False`` (the default) may be held back until the next durable
  record or :meth:`RunJournal.flush`. Records reach the store in the order they happened, so a
  durable record also makes every earlier one durable. The runner calls
  :meth:`RunJournal.flush` before it returns the run's outcome (which the caller then records);
  after ``LeaseLost`` it writes nothing more, and what is held back may be dropped.
* A step end that carries a checkpoint is durable whatever the caller passes (the journal
  enforces it): a checkpoint is only worth something once it is stored.
* Calls that return an answer (:meth:`RunJournal.renew_lease`) always reach the store at once.
* Errors of the store surface from the call that wrote the record — or, once records are
  buffered, from the durable call or flush that wrote it: ``LeaseLost`` (another worker owns the
  run: stop writing), ``StoreUnavailable`` (the database is away), and ``StepFailed`` with
  ``STORE_WRITE_FAILED`` when the database refused a step's record (the journal has replaced it by
  a minimal one that says so: never a step left ``started`` behind a refusal).

Today every record is written at once (synchronous store calls, kept off the event loop by a
thread), so durable and non-durable records behave alike; buffering the non-durable ones is a
change inside this module only. Secrets never reach the store in clear: the journal redacts every
text and value it records with the run's redactor.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from browserq.errors import Codes, StepFailed, StoreError
from browserq.recordable import dumps
from browserq.redact import Redactor
from browserq.store import ArtifactDir, IdentityLease, LeaseLost, Store, StoreUnavailable
from browserq.store.artifacts import StoredFile

log = structlog.get_logger(__name__)

#: Step outputs larger than this are stored in the step record as a summary only.
MAX_RECORDED_OUTPUT_BYTES = 256 * 1024

__all__ = [
    "MAX_RECORDED_OUTPUT_BYTES",
    "ArtifactDir",
    "IdentityLease",
    "LeaseLost",
    "RunJournal",
    "StepRecord",
    "Store",
    "StoreUnavailable",
    "StoredFile",
]


@dataclass(frozen=True)
class StepRecord:
    """A step attempt the journal knows about: what later records (its end, its artifacts) refer
    to. Opaque to the runner, so the journal may assign the store's id whenever it writes."""

    attempt_id: int
    path: str


class RunJournal:
    """Everything one run attempt records, in the order it happened (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        artifacts: ArtifactDir,
        *,
        run_id: str,
        run_attempt: int,
        token: int | None,
        redactor: Redactor,
        identity: IdentityLease | None = None,
    ) -> None:
        self.store = store
        self.artifacts = artifacts
        self.run_id = run_id
        self.run_attempt = run_attempt
        self.token = token  # the run lease's fencing token: every write carries it
        self.redactor = redactor
        self.identity = identity

    @property
    def artifact_base(self) -> Path:
        """The run's artifact directory (actions check artifact names against it)."""
        return self.artifacts.base / self.run_id

    async def _write(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Store calls are synchronous; keep them off the event loop."""
        return await asyncio.to_thread(fn, *args, **kwargs)

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
        attempt_id: int = await self._write(
            self.store.start_step,
            run_id=self.run_id,
            run_attempt=self.run_attempt,
            step_path=path,
            step_id=step_id,
            attempt=attempt,
            action=action,
            inputs=self.redactor.data(inputs),
            url_before=self.redactor.text(url_before) if url_before is not None else None,
            token=self.token,
        )
        return StepRecord(attempt_id, path)

    async def step_finished(
        self,
        record: StepRecord,
        *,
        status: str,
        url_after: str | None,
        failure: StepFailed | None = None,
        output: Any = None,
        checkpoint: dict[str, Any] | None = None,
        warnings: list[dict[str, Any]] | None = None,
        durable: bool = False,
    ) -> None:
        """A step attempt ended (``succeeded``/``skipped``/``failed``/``unknown``), with the
        checkpoint after it in the same transaction. Always durable when it has a checkpoint.

        A record the database refuses (not an outage, not a lost lease) is replaced by a minimal
        one that says so, and ``StepFailed(STORE_WRITE_FAILED)`` is raised."""
        redactor = self.redactor
        try:
            await self._write(
                self.store.finish_step,
                record.attempt_id,
                status=status,
                url_after=redactor.text(url_after) if url_after is not None else None,
                output=_recordable(redactor.data(output)),
                error_code=failure.code.code if failure else None,
                error_message=redactor.text(failure.message) if failure else None,
                retryable=failure.retryable if failure else None,
                token=self.token,
                checkpoint=checkpoint,
                warnings=warnings,
            )
        except (LeaseLost, StoreUnavailable):
            raise
        except StoreError as exc:
            raise await self._refused(record, status, failure, exc) from None

    async def _refused(
        self, record: StepRecord, status: str, failure: StepFailed | None, exc: StoreError
    ) -> StepFailed:
        """Replace a refused step record by a minimal one; return the failure that says so."""
        refused = StepFailed(
            Codes.STORE_WRITE_FAILED,
            f"the database refused this step's record ({_first_line(exc)}); "
            f"the step {'failed with ' + failure.code.code if failure else 'had ' + status}",
        )
        log.error("step record refused", run_id=self.run_id, step=record.path, error=_first_line(exc))
        await self._write(
            self.store.finish_step, record.attempt_id, status="failed", url_after=None, output=None,
            error_code=refused.code.code, error_message=refused.message, retryable=False, token=self.token,
        )
        return refused

    # --- artifacts -----------------------------------------------------------------------------
    async def artifact(
        self, record: StepRecord | None, kind: str, name: str, data: bytes, content_type: str
    ) -> StoredFile:
        """Keep ``data`` as the run's artifact ``name``, linked to the step attempt ``record``.
        The file is written at once (the caller gets its path); its record may be deferred."""
        name = self.redactor.text(name)  # a screenshot named after a param
        stored: StoredFile = await self._write(self.artifacts.write, self.run_id, name, data)
        await self._write(
            self.store.add_artifact,
            run_id=self.run_id,
            step_attempt_id=record.attempt_id if record is not None else None,
            kind=kind,
            path=stored.path,
            content_type=content_type,
            size=stored.size,
            sha256=stored.sha256,
            token=self.token,
        )
        return stored

    # --- the lease -----------------------------------------------------------------------------
    async def renew_lease(self, ttl_s: float) -> str | None:
        """Renew the run's lease (always at once); return the cancel reason when a cancel was
        requested, else None. Raises ``LeaseLost`` when another worker owns the run now."""
        assert self.token is not None, "only a leased run renews its lease"
        view = await self._write(self.store.renew_lease, self.run_id, token=self.token, ttl_s=ttl_s)
        if view.cancel_requested_at is not None:
            return str(view.cancel_reason or "cancelled")
        return None

    # --- the identity --------------------------------------------------------------------------
    async def identity_storage(self, storage_encrypted: str) -> None:
        """The identity's browser storage (encrypted), for its next run. Durable when it returns."""
        assert self.identity is not None
        await self._write(
            self.store.save_identity_storage,
            self.identity.name,
            token=self.identity.token,
            storage_encrypted=storage_encrypted,
        )

    async def identity_proxy(self, proxy_id: str) -> None:
        """The identity got another sticky proxy (its old one is cooling down or gone)."""
        assert self.identity is not None
        await self._write(
            self.store.set_identity_proxy, self.identity.name, token=self.identity.token, proxy_id=proxy_id
        )

    # --- barriers ------------------------------------------------------------------------------
    async def flush(self) -> None:
        """Every record so far is in the store when this returns (today: already, at once)."""
        return None


def _first_line(exc: BaseException, limit: int = 500) -> str:
    """The first line of an error's message (store errors can carry the SQL below it)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:limit]


def _recordable(value: Any) -> Any:
    """What the step record keeps of an output: the value, or a summary when it is large (the
    run's outputs hold it whole, within BROWSERQ_MAX_RUN_OUTPUT_BYTES)."""
    if value is None:
        return None
    encoded = dumps(value)
    if len(encoded) <= MAX_RECORDED_OUTPUT_BYTES:
        return json.loads(encoded)
    return {"truncated": True, "bytes": len(encoded), "type": type(value).__name__}
