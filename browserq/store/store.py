"""The run store: every template version, run, step attempt and artifact, in one database.

Each method runs one short transaction of its own, so one ``Store`` can be shared by threads.
Values come back as frozen view dataclasses, never as live ORM objects (except
:meth:`Store.get_template_body`, which returns a detached ``TemplateRecord``).

Durable runs
    A run moves through the state machine of :mod:`browserq.store.states`; every change is checked
    (:class:`IllegalTransition`) and logged in ``run_transitions``. A worker executes a run under a
    *lease* (:meth:`Store.acquire_lease`): an owner, an expiry it keeps pushing forward
    (:meth:`Store.renew_lease`) and a fencing *token*. Writes that pass ``token=`` are refused with
    :class:`LeaseLost` once the token is no longer the run's (someone took the run over), so a
    worker that was presumed dead cannot overwrite its successor's records.

Database outages
    Every transaction is retried as a whole on connection-level errors (and SQLite's "database is
    locked", PostgreSQL deadlocks), with exponential backoff from 0.2 s to 2 s, for up to
    ``retry_window_s``; then :class:`StoreUnavailable` (a StoreError) is raised. A commit whose
    acknowledgement was lost may have applied, so every retried write first looks for its own
    earlier effect (the step attempt, artifact, run, batch or transition it meant to write).

Identities
    Named visitor identities (sticky proxy, fingerprint seed, encrypted browser storage) leased
    to one run at a time: see :mod:`browserq.store.identities`, whose methods ``Store`` has.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import structlog
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, Select, and_, delete, exc, func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from alembic import command
from browserq.errors import StoreError, TemplateChanged
from browserq.store.engine import (
    SQLITE_BEGIN_OPTION,
    create_store_engine,
    is_disconnect,
    is_transient,
    mask_url,
    normalize_url,
    scrub,
    to_store_error,
)
from browserq.store.identities import IdentityMethods
from browserq.store.migrations import alembic_config
from browserq.store.models import (
    Artifact,
    Batch,
    Run,
    RunStatus,
    RunTransition,
    StepAttempt,
    StepStatus,
    TemplateRecord,
    TemplateVersion,
    utcnow,
)
from browserq.store.states import ACTIVE, FINISHED, IllegalTransition, check_transition
from browserq.store.views import (
    ArtifactView,
    BatchView,
    Lease,
    RunView,
    StepView,
    TransitionView,
    to_view,
)

if TYPE_CHECKING:
    from browserq.settings import Settings

log = structlog.get_logger(__name__)

T = TypeVar("T")

#: Alembic's ``context`` is process-global: upgrades from several threads take turns.
_UPGRADE_LOCK = threading.Lock()
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_FINAL_STEP_STATUSES = frozenset(
    {StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.UNKNOWN}
)

#: Backoff between tries of a transaction that hit a transient database error.
RETRY_FIRST_DELAY_S = 0.2
RETRY_MAX_DELAY_S = 2.0
DEFAULT_RETRY_WINDOW_S = 60.0

WORKER_LOST_CODE = "WORKER_LOST"
WORKER_LOST_MESSAGE = "the worker stopped before this step reported a result"
CANCELLED_CODE = "CANCELLED"

#: Run columns that :meth:`Store.transition` may not set through ``fields``.
_PROTECTED_FIELDS = frozenset({"id", "status", "lease_token", "created_at"})
_RUN_COLUMNS = frozenset(c.key for c in Run.__table__.columns)
_AWAITING = (RunStatus.QUEUED.value, RunStatus.RETRYING.value)


# --- errors ------------------------------------------------------------------------------------


class DuplicateRun(StoreError):
    """``create_run`` with an idempotency key that another run already has."""

    def __init__(self, idempotency_key: str, existing_run_id: str | None) -> None:
        self.idempotency_key = idempotency_key
        self.existing_run_id = existing_run_id
        super().__init__(
            f"idempotency key {idempotency_key!r} is already used by run {existing_run_id}"
        )


class StoreUnavailable(StoreError):
    """The database stayed unreachable (or locked) for the whole retry window."""


class LeaseLost(StoreError):
    """A fenced write with a token that is no longer the run's: another worker took it over,
    the lease was revoked, or the run has finished."""

    def __init__(
        self,
        run_id: str,
        token: int,
        *,
        current_token: int,
        holder: str | None,
        status: str,
        action: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.token = token
        self.current_token = current_token
        self.holder = holder
        self.status = status
        if current_token != token:
            now = f"token {current_token}" + (f", held by {holder}" if holder else ", not held")
            why = f"the run has moved on ({now}; status {status})"
        elif status != RunStatus.RUNNING.value:
            why = f"the run is {status}"
        else:
            why = "the lease was released"
        if action:
            super().__init__(f"{action}: the lease with token {token} is lost: {why}")
        else:
            super().__init__(f"the lease on run {run_id} with token {token} is lost: {why}")


class LeaseBusy(StoreError):
    """Another live worker holds the run's lease."""

    def __init__(self, run_id: str, holder: str, expires_at: datetime) -> None:
        self.run_id = run_id
        self.holder = holder
        self.expires_at = expires_at
        super().__init__(
            f"run {run_id} is being run by {holder} (lease valid until {expires_at.isoformat()})"
        )


class RunAlreadyFinished(StoreError):
    """The run is in a final status (completed, failed, cancelled or needs_review)."""

    def __init__(self, run: RunView) -> None:
        self.run = run
        super().__init__(f"run {run.id} is already {run.status}; it will not be run again")


# --- helpers -----------------------------------------------------------------------------------


def _run_status(status: RunStatus | str) -> str:
    try:
        return RunStatus(status).value
    except ValueError:
        allowed = ", ".join(s.value for s in RunStatus)
        raise ValueError(f"unknown run status {status!r}; expected one of {allowed}") from None


def _step_status(status: StepStatus | str) -> StepStatus:
    try:
        return StepStatus(status)
    except ValueError:
        allowed = ", ".join(s.value for s in StepStatus)
        raise ValueError(f"unknown step status {status!r}; expected one of {allowed}") from None


def _lease_live(run: Run, now: datetime) -> bool:
    return (
        run.lease_owner is not None
        and run.lease_expires_at is not None
        and run.lease_expires_at > now
    )


@dataclass(frozen=True, slots=True)
class _NeedVerdict:
    """acquire_lease must ask ``holder_dead`` about this holder (outside the transaction)."""

    owner: str
    token: int


@dataclass(frozen=True, slots=True)
class _Finished:
    """The transaction ended the run (committed); raise RunAlreadyFinished afterwards."""

    run: RunView


class Store(IdentityMethods):
    """Persistence for runs (and identities, see :class:`IdentityMethods`). ``database_url``: any SQLAlchemy URL (PostgreSQL or SQLite).

    ``retry_window_s``: how long a transaction keeps being retried while the database is
    unreachable (or, on SQLite, locked) before :class:`StoreUnavailable` is raised.
    """

    def __init__(
        self,
        database_url: str,
        *,
        echo: bool = False,
        retry_window_s: float = DEFAULT_RETRY_WINDOW_S,
    ) -> None:
        if retry_window_s < 0:
            raise ValueError(f"retry_window_s must be >= 0, got {retry_window_s}")
        self.url = normalize_url(database_url)
        self.retry_window_s = float(retry_window_s)
        self.engine: Engine = create_store_engine(self.url, echo=echo)
        # Writes ask SQLite for the write lock when the transaction begins (BEGIN IMMEDIATE), so
        # read-then-write transactions never fail with SQLITE_BUSY_SNAPSHOT; ignored elsewhere.
        self._write_engine = self.engine.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
        self._reading = sessionmaker(self.engine, expire_on_commit=False)
        self._writing = sessionmaker(self._write_engine, expire_on_commit=False)
        self._pg = self.engine.dialect.name == "postgresql"

    @classmethod
    def from_settings(cls, settings: Settings) -> Store:
        window = getattr(settings, "database_retry_window_s", None)
        return cls(
            settings.database_url,
            retry_window_s=DEFAULT_RETRY_WINDOW_S if window is None else float(window),
        )

    def __repr__(self) -> str:
        return f"Store({self.masked_url!r})"

    @property
    def masked_url(self) -> str:
        return mask_url(self.url)

    @property
    def dialect(self) -> str:
        """``"postgresql"`` or ``"sqlite"``."""
        return self.engine.dialect.name

    # --- plumbing ---------------------------------------------------------------------------
    def _retry(
        self,
        action: str,
        fn: Callable[[bool], T],
        *,
        passthrough: tuple[type[BaseException], ...] = (),
    ) -> T:
        """``fn(retried)``, tried again on transient database errors for ``retry_window_s``.

        ``retried`` is True from the second try on: an earlier try may have committed without
        us hearing back, and ``fn`` should look for its own earlier effect first. SQLAlchemy
        errors become StoreErrors, except the ``passthrough`` types, which are re-raised as is.
        """
        start = time.monotonic()
        delay = RETRY_FIRST_DELAY_S
        tries = 0
        while True:
            tries += 1
            try:
                return fn(tries > 1)
            except passthrough:
                raise
            except exc.SQLAlchemyError as e:
                if not is_transient(e):
                    raise to_store_error(e, self.url, action) from e
                if is_disconnect(e):
                    # Drop every pooled connection: they all lead to the server that went away.
                    self.engine.dispose()
                elapsed = time.monotonic() - start
                remaining = self.retry_window_s - elapsed
                if remaining <= 0:
                    raise self._unavailable(e, action, elapsed, tries) from e
                pause = min(delay, remaining)
                log.warning(
                    "database error, retrying",
                    action=action,
                    attempt=tries,
                    retry_in_s=round(pause, 2),
                    error=scrub(_first_line(e), self.url),
                )
                time.sleep(pause)
                delay = min(delay * 2, RETRY_MAX_DELAY_S)

    def _unavailable(
        self, error: BaseException, action: str, elapsed: float, tries: int
    ) -> StoreUnavailable:
        message = (
            f"{action}: database {self.masked_url} is unavailable "
            f"(gave up after {elapsed:.1f}s and {tries} tries; "
            f"retry_window_s={self.retry_window_s:g}): {_first_line(error)}"
        )
        return StoreUnavailable(scrub(message, self.url))

    def _tx(
        self,
        action: str,
        body: Callable[[Session, bool], T],
        *,
        write: bool,
        passthrough: tuple[type[BaseException], ...] = (),
    ) -> T:
        """Run ``body(session, retried)`` in one transaction, retried as a whole (see _retry)."""
        maker = self._writing if write else self._reading

        def attempt(retried: bool) -> T:
            with maker() as s, s.begin():
                return body(s, retried)

        return self._retry(action, attempt, passthrough=passthrough)

    def _read(self, action: str, body: Callable[[Session], T]) -> T:
        return self._tx(action, lambda s, _retried: body(s), write=False)

    def _locked(self, query: Select[Any]) -> Select[Any]:
        """``query`` with ``FOR UPDATE`` on PostgreSQL (SQLite writers already hold the lock)."""
        return query.with_for_update() if self._pg else query

    def _lock_run(self, s: Session, run_id: str) -> Run | None:
        return s.scalars(self._locked(select(Run).where(Run.id == run_id))).one_or_none()

    @staticmethod
    def _fence_run(run: Run, token: int, action: str) -> None:
        """LeaseLost unless ``token`` is the (locked) run's lease token."""
        if run.lease_token != token:
            raise LeaseLost(
                run.id,
                token,
                current_token=run.lease_token,
                holder=run.lease_owner,
                status=run.status,
                action=action,
            )

    def _fence(self, s: Session, run_id: str, token: int, action: str) -> None:
        """Lock the run row and check that ``token`` is still its lease token (else LeaseLost)."""
        query = select(Run.lease_token, Run.lease_owner, Run.status).where(Run.id == run_id)
        row = s.execute(self._locked(query)).one_or_none()
        if row is None:
            raise StoreError(f"{action}: no such run {run_id!r}")
        if row.lease_token != token:
            raise LeaseLost(
                run_id,
                token,
                current_token=row.lease_token,
                holder=row.lease_owner,
                status=row.status,
                action=action,
            )

    # --- schema -----------------------------------------------------------------------------
    def upgrade(self) -> None:
        """Migrate the database to the newest schema (a no-op when it is already there).

        Safe when several processes start at once: PostgreSQL takes an advisory lock, SQLite the
        write lock, for the whole upgrade (see alembic/env.py).
        """
        config = alembic_config(self.url.render_as_string(hide_password=False))

        def attempt(_retried: bool) -> None:
            with _UPGRADE_LOCK, self.engine.connect() as connection:
                connection.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
                config.attributes["connection"] = connection
                command.upgrade(config, "head")

        self._retry("upgrading the database schema", attempt)

    def current_revision(self) -> str | None:
        """The schema revision the database is at; None before the first upgrade."""

        def attempt(_retried: bool) -> str | None:
            with self.engine.connect() as connection:
                return MigrationContext.configure(connection).get_current_revision()

        return self._retry("reading the schema revision", attempt)

    def dispose(self) -> None:
        """Close every pooled connection (call before forking, and at shutdown)."""
        self.engine.dispose()

    # --- templates --------------------------------------------------------------------------
    def save_template(
        self,
        *,
        name: str,
        version: str,
        content_hash: str,
        body: str,
        source: str,
        canonical_hash: str | None = None,
    ) -> int:
        """Record a template version (idempotent); return its id. Safe under concurrent callers.

        With ``canonical_hash`` the ``name@version`` is pinned to it on first use, and a body
        with another canonical hash raises :class:`TemplateChanged` (nothing is written).
        """
        for what, digest in (("content_hash", content_hash), ("canonical_hash", canonical_hash)):
            if digest is not None and not _SHA256.match(digest):
                raise ValueError(f"{what} must be a lowercase sha256 hex digest, got {digest!r}")
        key = (
            TemplateRecord.name == name,
            TemplateRecord.version == version,
            TemplateRecord.content_hash == content_hash,
        )

        def save(s: Session, _retried: bool) -> int:
            pin = s.get(TemplateVersion, (name, version)) if canonical_hash else None
            if pin is not None and pin.content_hash != canonical_hash:
                raise TemplateChanged(f"{name}@{version}", source, canonical_hash or "", pin.content_hash)
            found = s.scalar(select(TemplateRecord.id).where(*key))
            if found is None:
                record = TemplateRecord(
                    name=name, version=version, content_hash=content_hash, body=body, source=source
                )
                s.add(record)
                s.flush()
                found = record.id
            if canonical_hash and pin is None:
                s.add(TemplateVersion(name=name, version=version, content_hash=canonical_hash,
                                      template_id=found))
                s.flush()
            return found

        action = f"saving template {name}@{version}"
        try:
            return self._tx(action, save, write=True, passthrough=(exc.IntegrityError,))
        except exc.IntegrityError:
            # Another caller inserted the same version (or pinned it) between our select and insert.
            return self._tx(action, save, write=True)

    def template_pin(self, name: str, version: str) -> str | None:
        """The content hash ``name@version`` is pinned to (None: no run used it yet)."""

        def read(s: Session) -> str | None:
            pin = s.get(TemplateVersion, (name, version))
            return pin.content_hash if pin is not None else None

        return self._read(f"reading the pin of template {name}@{version}", read)

    def get_template_body(self, template_id: int) -> TemplateRecord:
        """The detached template row (``.body`` is the exact YAML a run used)."""

        def read(s: Session) -> TemplateRecord:
            record = s.get(TemplateRecord, template_id)
            if record is None:
                raise StoreError(f"no template with id {template_id}")
            s.expunge(record)
            return record

        return self._read(f"reading template {template_id}", read)

    # --- runs -------------------------------------------------------------------------------
    def create_run(
        self,
        *,
        run_id: str,
        template_id: int,
        template_name: str,
        template_version: str,
        params: dict,
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
    ) -> None:
        """Insert a run and its first transition (from nothing to ``status``, reason "enqueued").

        ``secrets``: the encrypted secret params, never clear text. A reused idempotency key
        raises :class:`DuplicateRun` (a StoreError).
        """
        status_value = _run_status(status)

        def insert(s: Session, retried: bool) -> None:
            if retried:
                existing = s.get(Run, run_id)
                if (
                    existing is not None
                    and existing.template_id == template_id
                    and existing.idempotency_key == idempotency_key
                    and existing.params == params
                ):
                    return  # our earlier try committed
            now = utcnow()
            s.add(
                Run(
                    id=run_id,
                    template_id=template_id,
                    template_name=template_name,
                    template_version=template_version,
                    params=params,
                    status=status_value,
                    attempt=0,
                    task_id=task_id,
                    queue=queue,
                    idempotency_key=idempotency_key,
                    tenant=tenant,
                    secrets=secrets,
                    queued_at=now,
                    timeout_s=timeout_s,
                    created_at=now,
                    lease_token=0,
                    takeovers=0,
                    batch_id=batch_id,
                    status_reason=status_reason or "enqueued",
                    identity=identity,
                    identity_pool=identity_pool,
                    template_hash=template_hash,
                )
            )
            s.flush()  # the run row first: the transition references it
            s.add(
                RunTransition(
                    run_id=run_id,
                    at=now,
                    from_status=None,
                    to_status=status_value,
                    reason="enqueued",
                    worker=None,
                )
            )

        action = f"creating run {run_id}"
        try:
            self._tx(action, insert, write=True, passthrough=(exc.IntegrityError,))
        except exc.IntegrityError as e:
            if idempotency_key is not None:
                existing_run = self.find_run_by_idempotency_key(idempotency_key)
                if existing_run is not None and existing_run.id != run_id:
                    raise DuplicateRun(idempotency_key, existing_run.id) from e
            raise to_store_error(e, self.url, action) from e

    def get_run(self, run_id: str) -> RunView | None:
        def read(s: Session) -> RunView | None:
            run = s.get(Run, run_id)
            return None if run is None else to_view(RunView, run)

        return self._read(f"reading run {run_id}", read)

    def find_run_by_idempotency_key(self, idempotency_key: str) -> RunView | None:
        def read(s: Session) -> RunView | None:
            run = s.scalar(select(Run).where(Run.idempotency_key == idempotency_key))
            return None if run is None else to_view(RunView, run)

        return self._read("looking up an idempotency key", read)

    def _apply_transition(
        self,
        s: Session,
        run: Run,
        to: RunStatus,
        *,
        reason: str,
        worker: str | None,
        now: datetime,
        fenced: bool = False,
        takeover: bool = False,
        fields: dict[str, Any] | None = None,
    ) -> None:
        """Check and apply ``run.status → to`` and log it (the caller holds the row lock).

        Leaving ``running`` ends the lease. When the holder itself does it (``fenced``: it
        presented the current token) the token stays, so its own late writes still pass;
        anyone else (the sweeper, an operator) bumps the token, which fences the old holder out.
        """
        frm = RunStatus(run.status)
        if to is frm and not takeover:
            raise IllegalTransition(
                run.id, frm, to, note="only acquire_lease may take over a running run"
            )
        check_transition(frm, to, run_id=run.id)
        if frm is RunStatus.RUNNING and to is not RunStatus.RUNNING:
            if not fenced:
                run.lease_token += 1
            if to is RunStatus.QUEUED and not fenced:
                # Re-enqueued from under its worker (the sweeper: the lease expired, the worker
                # vanished). That is a lost worker like a takeover: the poison cap counts it.
                run.takeovers += 1
            run.lease_owner = None
            run.lease_expires_at = None
        run.status = to.value
        run.finished_at = now if to in FINISHED else None
        run.status_reason = reason
        for key, value in (fields or {}).items():
            setattr(run, key, value)
        s.add(
            RunTransition(
                run_id=run.id,
                at=now,
                from_status=frm.value,
                to_status=to.value,
                reason=reason,
                worker=worker,
            )
        )

    def _already_applied(self, s: Session, run: Run, to: RunStatus, reason: str) -> bool:
        """On a retry: did our earlier, unacknowledged try already make this transition?"""
        if run.status != to.value:
            return False
        last = s.scalars(
            select(RunTransition)
            .where(RunTransition.run_id == run.id)
            .order_by(RunTransition.id.desc())
            .limit(1)
        ).first()
        return last is not None and last.to_status == to.value and last.reason == reason

    def transition(
        self,
        run_id: str,
        to: RunStatus | str,
        *,
        reason: str,
        worker: str | None = None,
        token: int | None = None,
        fields: dict[str, Any] | None = None,
    ) -> RunView:
        """Move the run to ``to`` in one transaction, or raise (and write nothing).

        Locks the row, checks the fencing ``token`` when given (:class:`LeaseLost`), checks the
        state machine (:class:`IllegalTransition`), sets the status, ``status_reason`` (=
        ``reason`` unless ``fields`` sets it), ``finished_at`` (final statuses; cleared
        otherwise) and ``fields`` (any other run columns, e.g. outputs or error_code), and
        appends a ``run_transitions`` row.
        """
        target = RunStatus(_run_status(to))
        bad = set(fields or {}) - (_RUN_COLUMNS - _PROTECTED_FIELDS)
        if bad:
            raise ValueError(f"transition cannot set {sorted(bad)}: not settable run columns")
        action = f"moving run {run_id} to {target.value}"

        def body(s: Session, retried: bool) -> RunView:
            run = self._lock_run(s, run_id)
            if run is None:
                raise StoreError(f"{action}: no such run {run_id!r}")
            if retried and self._already_applied(s, run, target, reason):
                return to_view(RunView, run)
            if token is not None:
                self._fence_run(run, token, action)
            self._apply_transition(
                s,
                run,
                target,
                reason=reason,
                worker=worker,
                now=utcnow(),
                fenced=token is not None,
                fields=fields,
            )
            s.flush()
            return to_view(RunView, run)

        return self._tx(action, body, write=True)

    def transitions(self, run_id: str) -> list[TransitionView]:
        """The run's status history, oldest first (the creation has ``from_status`` None)."""
        query = (
            select(RunTransition).where(RunTransition.run_id == run_id).order_by(RunTransition.id)
        )
        return self._read(
            f"reading transitions of run {run_id}",
            lambda s: [to_view(TransitionView, row) for row in s.scalars(query)],
        )

    def start_run(self, run_id: str, *, worker: str) -> RunView:
        """A worker starts (or restarts) the run without a lease (in-process runs): running,
        attempt + 1, heartbeat now. ``started_at`` is set by the first start only.

        Restarting a run that is ``running`` counts as a takeover and revokes any lease on it.
        """
        action = f"starting run {run_id}"

        def body(s: Session, _retried: bool) -> RunView:
            run = self._lock_run(s, run_id)
            if run is None:
                raise StoreError(f"cannot start run {run_id!r}: no such run")
            now = utcnow()
            restart = run.status == RunStatus.RUNNING.value
            if restart:
                reason = (
                    f"restarted by {worker} (was running on {run.worker or 'an unknown worker'})"
                )
            else:
                reason = f"started by {worker}"
            self._apply_transition(
                s, run, RunStatus.RUNNING, reason=reason, worker=worker, now=now, takeover=restart
            )
            if restart:
                run.takeovers += 1
                run.lease_token += 1
                run.lease_owner = None
                run.lease_expires_at = None
            run.attempt += 1
            run.started_at = run.started_at or now
            run.heartbeat_at = now
            run.worker = worker
            s.flush()
            return to_view(RunView, run)

        return self._tx(action, body, write=True)

    def heartbeat(self, run_id: str) -> None:
        """Record that the worker running ``run_id`` is alive."""
        self._stamp(run_id, "heartbeat_at", "heartbeat")

    def _stamp(self, run_id: str, column: str, what: str) -> None:
        """Set one timestamp column of a run to now (StoreError for an unknown run)."""

        def body(s: Session, _retried: bool) -> None:
            result = s.execute(
                update(Run)
                .where(Run.id == run_id)
                .values({column: utcnow()})
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 0:
                raise StoreError(f"cannot {what} run {run_id!r}: no such run")

        self._tx(f"{what} of run {run_id}", body, write=True)

    def finish_run(
        self,
        run_id: str,
        *,
        status: RunStatus | str,
        outputs: dict | None,
        error_code: str | None = None,
        error_message: str | None = None,
        error_step_path: str | None = None,
        token: int | None = None,
        worker: str | None = None,
        reason: str | None = None,
        warnings: list[dict[str, Any]] | None = None,
    ) -> None:
        """Move the run to ``status`` (through the state machine) with its outputs and error.

        A final status sets ``finished_at``; a non-final one (e.g. ``retrying``) clears it.
        ``token``: fence the write with the caller's lease. ``worker`` defaults to the run's
        worker; ``reason`` to a summary of the outcome. ``warnings``: where a limit cut the
        result short (stored as NULL when empty).
        """
        target = RunStatus(_run_status(status))
        if reason is None:
            if error_code or error_message:
                reason = ": ".join(p for p in (error_code, error_message) if p)
            else:
                reason = f"{target.value} by its worker"
        action = f"finishing run {run_id}"

        def body(s: Session, retried: bool) -> None:
            run = self._lock_run(s, run_id)
            if run is None:
                raise StoreError(f"cannot finish run {run_id!r}: no such run")
            if retried and self._already_applied(s, run, target, reason):
                return
            if token is not None:
                self._fence_run(run, token, action)
            now = utcnow()
            self._apply_transition(
                s,
                run,
                target,
                reason=reason,
                worker=worker if worker is not None else run.worker,
                now=now,
                fenced=token is not None,
                fields={
                    "outputs": outputs,
                    "error_code": error_code,
                    "error_message": error_message,
                    "error_step_path": error_step_path,
                    "heartbeat_at": now,
                    "warnings": warnings or None,
                },
            )

        self._tx(action, body, write=True)

    def delete_run(self, run_id: str) -> None:
        """Delete a run with its step attempts, artifact rows and transitions (no-op if absent)."""

        def body(s: Session, _retried: bool) -> None:
            s.execute(
                delete(Run).where(Run.id == run_id).execution_options(synchronize_session=False)
            )

        self._tx(f"deleting run {run_id}", body, write=True)

    def list_runs(
        self, *, limit: int = 20, status: RunStatus | str | None = None, template: str | None = None
    ) -> list[RunView]:
        """The newest runs first, optionally of one status and/or one template name."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        query = select(Run).order_by(Run.created_at.desc(), Run.id.desc()).limit(limit)
        if status is not None:
            query = query.where(Run.status == _run_status(status))
        if template is not None:
            query = query.where(Run.template_name == template)
        return self._read(
            "listing runs", lambda s: [to_view(RunView, run) for run in s.scalars(query)]
        )

    def run_ids_starting_with(self, prefix: str, *, limit: int = 5) -> list[str]:
        """Run ids that begin with ``prefix`` (so people can type a short id)."""
        cleaned = "".join(ch for ch in prefix.lower() if ch in "0123456789abcdef")
        if not cleaned:
            return []
        query = select(Run.id).where(Run.id.startswith(cleaned)).order_by(Run.id).limit(limit)
        return self._read("looking up a run id", lambda s: list(s.scalars(query)))

    def mark_enqueued(self, run_id: str) -> None:
        """Record that a task message was just sent for the run (``enqueued_at`` = now)."""
        self._stamp(run_id, "enqueued_at", "mark enqueued")

    # --- leases -----------------------------------------------------------------------------
    def acquire_lease(
        self,
        run_id: str,
        *,
        owner: str,
        ttl_s: float,
        holder_dead: Callable[[str], bool] | None = None,
    ) -> Lease:
        """Take the right to execute the run for ``ttl_s`` seconds; race-free across processes.

        * final status (or needs_review) → :class:`RunAlreadyFinished`;
        * another owner's unexpired lease → :class:`LeaseBusy`, unless ``holder_dead(owner)``
          says that worker is gone (asked outside any transaction);
        * otherwise a new lease: token + 1, attempt + 1, status ``running`` (logged). Taking a
          run that was already ``running`` is a takeover (``takeovers`` + 1). A running run whose
          cancellation was requested and whose worker is gone is cancelled instead
          (RunAlreadyFinished).
        """
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be positive, got {ttl_s}")
        action = f"acquiring a lease on run {run_id} for {owner}"
        verdicts: dict[tuple[str, int], bool] = {}

        def body(s: Session, retried: bool) -> Lease | _NeedVerdict | _Finished:
            run = self._lock_run(s, run_id)
            if run is None:
                raise StoreError(f"cannot acquire a lease on run {run_id!r}: no such run")
            now = utcnow()
            status = RunStatus(run.status)
            if status.terminal:
                raise RunAlreadyFinished(to_view(RunView, run))
            live = _lease_live(run, now)
            if retried and status is RunStatus.RUNNING and live and run.lease_owner == owner:
                last = s.scalars(
                    select(RunTransition.reason)
                    .where(RunTransition.run_id == run_id)
                    .order_by(RunTransition.id.desc())
                    .limit(1)
                ).first()
                return self._lease_of(run, takeover=bool(last and last.startswith("taken over")))
            takeover = status is RunStatus.RUNNING
            previous = run.lease_owner or run.worker or "an unknown worker"
            if takeover and live and run.lease_owner != owner:
                assert run.lease_owner is not None and run.lease_expires_at is not None
                key = (run.lease_owner, run.lease_token)
                if holder_dead is None:
                    raise LeaseBusy(run_id, run.lease_owner, run.lease_expires_at)
                if key not in verdicts:
                    return _NeedVerdict(*key)
                if not verdicts[key]:
                    raise LeaseBusy(run_id, run.lease_owner, run.lease_expires_at)
                why = "holder dead"
            elif takeover and live:
                why = "re-acquired by its holder"
            elif takeover and run.lease_owner is None:
                why = "lease released" if run.lease_expires_at is not None else "no lease"
            else:
                why = "lease expired"
            if takeover and run.cancel_requested_at is not None:
                self._apply_transition(
                    s,
                    run,
                    RunStatus.CANCELLED,
                    reason=f"cancelled: {run.cancel_reason} (its worker {previous} is gone)",
                    worker=owner,
                    now=now,
                    fields={
                        "error_code": CANCELLED_CODE,
                        "error_message": run.cancel_reason,
                    },
                )
                s.flush()
                return _Finished(to_view(RunView, run))
            reason = f"taken over from {previous} ({why})" if takeover else f"started by {owner}"
            self._apply_transition(
                s, run, RunStatus.RUNNING, reason=reason, worker=owner, now=now, takeover=takeover
            )
            run.lease_token += 1
            run.lease_owner = owner
            run.lease_expires_at = now + timedelta(seconds=ttl_s)
            run.attempt += 1
            run.started_at = run.started_at or now
            run.heartbeat_at = now
            run.worker = owner
            if takeover:
                run.takeovers += 1
            s.flush()
            return self._lease_of(run, takeover=takeover)

        for _ in range(10):
            result = self._tx(action, body, write=True)
            if isinstance(result, Lease):
                return result
            if isinstance(result, _Finished):
                raise RunAlreadyFinished(result.run)
            assert holder_dead is not None
            verdicts[(result.owner, result.token)] = bool(holder_dead(result.owner))
        raise StoreError(f"{action}: the lease kept changing hands; giving up")

    @staticmethod
    def _lease_of(run: Run, *, takeover: bool) -> Lease:
        assert run.lease_owner is not None and run.lease_expires_at is not None
        return Lease(
            run_id=run.id,
            owner=run.lease_owner,
            token=run.lease_token,
            expires_at=run.lease_expires_at,
            attempt=run.attempt,
            takeover=takeover,
            takeovers=run.takeovers,
        )

    def renew_lease(self, run_id: str, *, token: int, ttl_s: float) -> RunView:
        """Push the lease's expiry to now + ``ttl_s`` and record a heartbeat.

        :class:`LeaseLost` when the token is not the run's any more, the lease was released or
        the run is no longer running. The returned view carries ``cancel_requested_at``: a
        worker that sees it set should stop and finish the run as cancelled.
        """
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be positive, got {ttl_s}")
        action = f"renewing the lease on run {run_id}"

        def body(s: Session, _retried: bool) -> RunView:
            run = self._lock_run(s, run_id)
            if run is None:
                raise StoreError(f"{action}: no such run {run_id!r}")
            if (
                run.lease_token != token
                or run.status != RunStatus.RUNNING.value
                or run.lease_owner is None
            ):
                raise LeaseLost(
                    run_id,
                    token,
                    current_token=run.lease_token,
                    holder=run.lease_owner,
                    status=run.status,
                    action=action,
                )
            now = utcnow()
            run.lease_expires_at = now + timedelta(seconds=ttl_s)
            run.heartbeat_at = now
            s.flush()
            return to_view(RunView, run)

        return self._tx(action, body, write=True)

    def release_lease(self, run_id: str, *, token: int) -> None:
        """Give the lease up if ``token`` is still the run's (otherwise do nothing).

        A run released while still ``running`` gets an already-expired lease, so the sweeper or
        another worker can pick it up at once.
        """

        def body(s: Session, _retried: bool) -> None:
            run = self._lock_run(s, run_id)
            if run is None or run.lease_token != token:
                return
            run.lease_owner = None
            running = run.status == RunStatus.RUNNING.value
            run.lease_expires_at = utcnow() if running else None

        self._tx(f"releasing the lease on run {run_id}", body, write=True)

    def save_checkpoint(self, run_id: str, *, token: int, checkpoint: dict[str, Any]) -> None:
        """Store the run's checkpoint (JSON), fenced by the lease token."""
        action = f"saving the checkpoint of run {run_id}"

        def body(s: Session, _retried: bool) -> None:
            self._fence(s, run_id, token, action)
            s.execute(
                update(Run)
                .where(Run.id == run_id)
                .values(checkpoint=checkpoint)
                .execution_options(synchronize_session=False)
            )

        self._tx(action, body, write=True)

    # --- cancellation and sweeping ---------------------------------------------------------
    def request_cancel(self, run_id: str, *, reason: str) -> RunView:
        """Cancel the run: at once when it is waiting (queued/retrying); when it is running, set
        ``cancel_requested_at`` (its worker sees it at its next renew_lease and stops). A run in
        a final status (needs_review included) is returned unchanged."""
        action = f"cancelling run {run_id}"

        def body(s: Session, _retried: bool) -> RunView:
            run = self._lock_run(s, run_id)
            if run is None:
                raise StoreError(f"{action}: no such run {run_id!r}")
            self._cancel(s, run, reason, utcnow())
            s.flush()
            return to_view(RunView, run)

        return self._tx(action, body, write=True)

    def _cancel(self, s: Session, run: Run, reason: str, now: datetime) -> bool:
        """Cancel or request cancellation of a locked run; True if anything changed."""
        if run.status in _AWAITING:
            self._apply_transition(
                s,
                run,
                RunStatus.CANCELLED,
                reason=f"cancelled: {reason}",
                worker=None,
                now=now,
                fields={
                    "error_code": CANCELLED_CODE,
                    "error_message": reason,
                    "cancel_requested_at": now,
                    "cancel_reason": reason,
                },
            )
            return True
        if run.status == RunStatus.RUNNING.value and run.cancel_requested_at is None:
            run.cancel_requested_at = now
            run.cancel_reason = reason
            return True
        return False

    def stuck_runs(self, *, queued_older_than_s: float, limit: int = 100) -> list[RunView]:
        """Runs that need the sweeper: ``running`` with an expired lease, and ``queued`` or
        ``retrying`` with no task message sent (``enqueued_at``, else ``queued_at``) for longer
        than ``queued_older_than_s``. Oldest first. (Running runs without a lease, started by
        :meth:`start_run`, are never listed: nothing says whether their process is alive.)"""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        now = utcnow()
        cutoff = now - timedelta(seconds=queued_older_than_s)
        waiting_since = func.coalesce(Run.enqueued_at, Run.queued_at)
        query = (
            select(Run)
            .where(
                or_(
                    and_(Run.status == RunStatus.RUNNING.value, Run.lease_expires_at < now),
                    and_(Run.status.in_(_AWAITING), waiting_since < cutoff),
                )
            )
            .order_by(func.coalesce(Run.lease_expires_at, waiting_since), Run.id)
            .limit(limit)
        )
        return self._read(
            "looking for stuck runs", lambda s: [to_view(RunView, r) for r in s.scalars(query)]
        )

    # --- steps ------------------------------------------------------------------------------
    def start_step(
        self,
        *,
        run_id: str,
        run_attempt: int,
        step_path: str,
        step_id: str | None,
        attempt: int,
        action: str,
        inputs: dict,
        url_before: str | None,
        token: int | None = None,
    ) -> int:
        """Append a ``started`` step attempt; return its id for :meth:`finish_step`."""
        return self._insert_step(
            run_id=run_id,
            run_attempt=run_attempt,
            step_path=step_path,
            step_id=step_id,
            attempt=attempt,
            action=action,
            inputs=inputs,
            url_before=url_before,
            status=StepStatus.STARTED,
            token=token,
        )

    def record_skipped_step(
        self,
        *,
        run_id: str,
        run_attempt: int,
        step_path: str,
        step_id: str | None,
        attempt: int,
        action: str,
        inputs: dict,
        url_before: str | None,
        reason: str,
        token: int | None = None,
    ) -> int:
        """Append one finished ``skipped`` row; ``reason`` is kept in ``error_message``."""
        return self._insert_step(
            run_id=run_id,
            run_attempt=run_attempt,
            step_path=step_path,
            step_id=step_id,
            attempt=attempt,
            action=action,
            inputs=inputs,
            url_before=url_before,
            status=StepStatus.SKIPPED,
            reason=reason,
            token=token,
        )

    def _insert_step(
        self,
        *,
        status: StepStatus,
        token: int | None,
        reason: str | None = None,
        **columns: Any,
    ) -> int:
        run_id = columns["run_id"]
        action = f"recording step {columns['step_path']} of run {run_id}"

        def body(s: Session, retried: bool) -> int:
            if token is not None:
                self._fence(s, run_id, token, action)
            if retried:
                # (run, run attempt, step path, step attempt) names one step execution.
                earlier = s.scalar(
                    select(StepAttempt.id)
                    .where(
                        StepAttempt.run_id == run_id,
                        StepAttempt.run_attempt == columns["run_attempt"],
                        StepAttempt.step_path == columns["step_path"],
                        StepAttempt.attempt == columns["attempt"],
                    )
                    .order_by(StepAttempt.id.desc())
                    .limit(1)
                )
                if earlier is not None:
                    return earlier
            now = utcnow()
            row = StepAttempt(**columns, status=status.value, started_at=now)
            if status is StepStatus.SKIPPED:
                row.finished_at = now
                row.duration_ms = 0.0
                row.url_after = columns["url_before"]
                row.error_message = reason
            s.add(row)
            s.flush()
            return row.id

        return self._tx(action, body, write=True)

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
    ) -> None:
        """Move a ``started`` attempt to its final status; sets ``finished_at`` and ``duration_ms``.

        ``warnings``: ``[{code, message}]`` when the step succeeded but a limit cut it short.

        ``checkpoint``: also store the run's checkpoint, in the same transaction (so a step is
        never recorded as done without the checkpoint that covers it, nor the other way round).
        """
        final = _step_status(status)
        if final not in _FINAL_STEP_STATUSES:
            raise ValueError(f"finish_step needs a final status, got {final.value!r}")
        action = f"finishing step attempt {step_attempt_id}"

        def body(s: Session, retried: bool) -> None:
            found = s.execute(
                select(StepAttempt.run_id, StepAttempt.started_at, StepAttempt.status).where(
                    StepAttempt.id == step_attempt_id
                )
            ).one_or_none()
            if found is None:
                raise StoreError(f"cannot finish step attempt {step_attempt_id}: no such attempt")
            if token is not None:
                self._fence(s, found.run_id, token, action)
            if retried and found.status == final.value:
                return  # our earlier try committed
            now = utcnow()
            duration_ms = max(0.0, (now - found.started_at).total_seconds() * 1000.0)
            result = s.execute(
                update(StepAttempt)
                .where(
                    StepAttempt.id == step_attempt_id,
                    StepAttempt.status == StepStatus.STARTED.value,
                )
                .values(
                    status=final.value,
                    url_after=url_after,
                    output=output,
                    error_code=error_code,
                    error_message=error_message,
                    retryable=retryable,
                    finished_at=now,
                    duration_ms=duration_ms,
                    warnings=warnings or None,
                )
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 0:
                raise StoreError(
                    f"cannot finish step attempt {step_attempt_id}: it is already finished"
                )
            if checkpoint is not None:
                s.execute(
                    update(Run)
                    .where(Run.id == found.run_id)
                    .values(checkpoint=checkpoint)
                    .execution_options(synchronize_session=False)
                )

        self._tx(action, body, write=True)

    def mark_interrupted_steps(self, run_id: str, *, before_attempt: int) -> list[StepView]:
        """Step attempts left ``started`` by run attempts before ``before_attempt`` (their worker
        died) become ``unknown`` with error WORKER_LOST; returns them (now unknown)."""
        action = f"marking interrupted steps of run {run_id}"

        def body(s: Session, retried: bool) -> list[StepView]:
            self._lock_run(s, run_id)  # runs before steps, like every fenced write
            statuses = [StepStatus.STARTED.value]
            if retried:  # our earlier try may have committed: return its rows too
                statuses.append(StepStatus.UNKNOWN.value)
            rows = list(
                s.scalars(
                    select(StepAttempt)
                    .where(
                        StepAttempt.run_id == run_id,
                        StepAttempt.run_attempt < before_attempt,
                        StepAttempt.status.in_(statuses),
                        or_(
                            StepAttempt.status == StepStatus.STARTED.value,
                            StepAttempt.error_code == WORKER_LOST_CODE,
                        ),
                    )
                    .order_by(StepAttempt.id)
                )
            )
            for row in rows:
                row.status = StepStatus.UNKNOWN.value
                row.error_code = WORKER_LOST_CODE
                row.error_message = WORKER_LOST_MESSAGE
            s.flush()
            return [to_view(StepView, row) for row in rows]

        return self._tx(action, body, write=True)

    def steps(self, run_id: str) -> list[StepView]:
        """Every step attempt of the run, in the order they were recorded."""
        query = select(StepAttempt).where(StepAttempt.run_id == run_id).order_by(StepAttempt.id)
        return self._read(
            f"reading steps of run {run_id}",
            lambda s: [to_view(StepView, row) for row in s.scalars(query)],
        )

    # --- artifacts --------------------------------------------------------------------------
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
        action = f"recording artifact {path} of run {run_id}"

        def body(s: Session, retried: bool) -> int:
            if token is not None:
                self._fence(s, run_id, token, action)
            if retried:
                earlier = s.scalar(
                    select(Artifact.id)
                    .where(
                        Artifact.run_id == run_id,
                        Artifact.path == path,
                        Artifact.sha256 == sha256,
                        Artifact.kind == str(kind),
                    )
                    .order_by(Artifact.id.desc())
                    .limit(1)
                )
                if earlier is not None:
                    return earlier
            row = Artifact(
                run_id=run_id,
                step_attempt_id=step_attempt_id,
                kind=str(kind),
                path=path,
                content_type=content_type,
                size=size,
                sha256=sha256,
                created_at=utcnow(),
            )
            s.add(row)
            s.flush()
            return row.id

        return self._tx(action, body, write=True)

    def artifacts(self, run_id: str) -> list[ArtifactView]:
        query = select(Artifact).where(Artifact.run_id == run_id).order_by(Artifact.id)
        return self._read(
            f"reading artifacts of run {run_id}",
            lambda s: [to_view(ArtifactView, row) for row in s.scalars(query)],
        )

    # --- batches ----------------------------------------------------------------------------
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
            self._tx(action, body, write=True, passthrough=(exc.IntegrityError,))
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
        batch = s.scalars(self._locked(query) if lock else query).one_or_none()
        if batch is None:
            raise StoreError(f"{action}: no such batch {batch_id!r}")
        return batch

    def batch_summary(self, batch_id: str) -> BatchView:
        """The batch with its runs counted by status."""
        action = f"reading batch {batch_id}"
        return self._read(action, lambda s: self._summary(s, self._get_batch(s, batch_id, action)))

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
            if result.rowcount == 1:
                return True
            self._get_batch(s, batch_id, action)  # raises if there is no such batch
            return False

        return self._tx(action, body, write=True)

    def cancel_batch_remaining(self, batch_id: str, *, reason: str) -> int:
        """Cancel the batch's queued and retrying runs, request cancellation of its running
        ones; return how many runs this call cancelled or asked to stop."""
        action = f"cancelling the rest of batch {batch_id}"

        def body(s: Session, _retried: bool) -> int:
            self._get_batch(s, batch_id, action)
            runs = s.scalars(
                self._locked(
                    select(Run)
                    .where(
                        Run.batch_id == batch_id,
                        Run.status.in_([status.value for status in ACTIVE]),
                    )
                    .order_by(Run.id)
                )
            ).all()
            now = utcnow()
            changed = sum(1 for run in runs if self._cancel(s, run, reason, now))
            s.flush()
            return changed

        return self._tx(action, body, write=True)

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

        return self._tx(action, body, write=True)

    def batch_runs(
        self, batch_id: str, *, statuses: Iterable[RunStatus | str] = ()
    ) -> list[RunView]:
        """The batch's runs, oldest first, optionally only those in ``statuses``."""
        query = select(Run).where(Run.batch_id == batch_id).order_by(Run.created_at, Run.id)
        wanted = [_run_status(status) for status in statuses]
        if wanted:
            query = query.where(Run.status.in_(wanted))
        return self._read(
            f"reading runs of batch {batch_id}",
            lambda s: [to_view(RunView, run) for run in s.scalars(query)],
        )


def _first_line(error: BaseException) -> str:
    orig = getattr(error, "orig", None)
    text = str(orig if orig is not None else error).strip()
    return text.splitlines()[0] if text else type(error).__name__


__all__ = [
    "DuplicateRun",
    "LeaseBusy",
    "LeaseLost",
    "RunAlreadyFinished",
    "Store",
    "StoreUnavailable",
]
