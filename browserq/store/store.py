"""The run store: every template version, run, step attempt and artifact, in one database.

Each method opens its own short session and transaction, so one ``Store`` can be shared by
threads. Values come back as frozen view dataclasses, never as live ORM objects (except
:meth:`Store.get_template_body`, which returns a detached ``TemplateRecord``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, delete, exc, func, literal, select, update
from sqlalchemy.orm import Session, sessionmaker

from alembic import command
from browserq.errors import StoreError
from browserq.store.engine import (
    SQLITE_BEGIN_OPTION,
    create_store_engine,
    mask_url,
    normalize_url,
    to_store_error,
    translate_errors,
)
from browserq.store.migrations import alembic_config
from browserq.store.models import (
    Artifact,
    Run,
    RunStatus,
    StepAttempt,
    StepStatus,
    TemplateRecord,
    UTCDateTime,
    utcnow,
)
from browserq.store.views import ArtifactView, RunView, StepView, to_view

if TYPE_CHECKING:
    from browserq.settings import Settings

#: Alembic's ``context`` is process-global: upgrades from several threads take turns.
_UPGRADE_LOCK = threading.Lock()
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_FINAL_STEP_STATUSES = frozenset({StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED})


class DuplicateRun(StoreError):
    """``create_run`` with an idempotency key that another run already has."""

    def __init__(self, idempotency_key: str, existing_run_id: str | None) -> None:
        self.idempotency_key = idempotency_key
        self.existing_run_id = existing_run_id
        super().__init__(
            f"idempotency key {idempotency_key!r} is already used by run {existing_run_id}"
        )


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


class Store:
    """Persistence for runs. ``database_url``: any SQLAlchemy URL (PostgreSQL or SQLite)."""

    def __init__(self, database_url: str, *, echo: bool = False) -> None:
        self.url = normalize_url(database_url)
        self.engine: Engine = create_store_engine(self.url, echo=echo)
        # Writes ask SQLite for the write lock when the transaction begins (BEGIN IMMEDIATE), so
        # read-then-write transactions never fail with SQLITE_BUSY_SNAPSHOT; ignored elsewhere.
        self._write_engine = self.engine.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
        self._reading = sessionmaker(self.engine, expire_on_commit=False)
        self._writing = sessionmaker(self._write_engine, expire_on_commit=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> Store:
        return cls(settings.database_url)

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
    def _errors(self, action: str) -> AbstractContextManager[None]:
        return translate_errors(self.url, action)

    @contextmanager
    def _read(self, action: str) -> Iterator[Session]:
        with self._errors(action), self._reading() as s, s.begin():
            yield s

    @contextmanager
    def _write(self, action: str) -> Iterator[Session]:
        with self._errors(action), self._writing() as s, s.begin():
            yield s

    # --- schema -----------------------------------------------------------------------------
    def upgrade(self) -> None:
        """Migrate the database to the newest schema (a no-op when it is already there).

        Safe when several processes start at once: PostgreSQL takes an advisory lock, SQLite the
        write lock, for the whole upgrade (see alembic/env.py).
        """
        config = alembic_config(self.url.render_as_string(hide_password=False))
        with (
            _UPGRADE_LOCK,
            self._errors("upgrading the database schema"),
            self.engine.connect() as connection,
        ):
            connection.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def current_revision(self) -> str | None:
        """The schema revision the database is at; None before the first upgrade."""
        with self._errors("reading the schema revision"), self.engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()

    def dispose(self) -> None:
        """Close every pooled connection (call before forking, and at shutdown)."""
        self.engine.dispose()

    # --- templates --------------------------------------------------------------------------
    def save_template(
        self, *, name: str, version: str, content_hash: str, body: str, source: str
    ) -> int:
        """Record a template version (idempotent); return its id. Safe under concurrent callers."""
        if not _SHA256.match(content_hash):
            raise ValueError(
                f"content_hash must be a lowercase sha256 hex digest, got {content_hash!r}"
            )
        key = (
            TemplateRecord.name == name,
            TemplateRecord.version == version,
            TemplateRecord.content_hash == content_hash,
        )
        with self._errors(f"saving template {name}@{version}"):
            try:
                return self._save_template(key, name, version, content_hash, body, source)
            except exc.IntegrityError:
                # Another caller inserted the same version between our select and our insert.
                return self._save_template(key, name, version, content_hash, body, source)

    def _save_template(
        self, key: tuple, name: str, version: str, content_hash: str, body: str, source: str
    ) -> int:
        with self._writing() as s, s.begin():
            found = s.scalar(select(TemplateRecord.id).where(*key))
            if found is not None:
                return found
            record = TemplateRecord(
                name=name, version=version, content_hash=content_hash, body=body, source=source
            )
            s.add(record)
            s.flush()
            return record.id

    def get_template_body(self, template_id: int) -> TemplateRecord:
        """The detached template row (``.body`` is the exact YAML a run used)."""
        with self._read(f"reading template {template_id}") as s:
            record = s.get(TemplateRecord, template_id)
            if record is None:
                raise StoreError(f"no template with id {template_id}")
            s.expunge(record)
            return record

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
    ) -> None:
        """Insert a run (``secrets``: the encrypted secret params, never clear text). A reused idempotency key raises :class:`DuplicateRun` (a StoreError)."""
        now = utcnow()
        run = Run(
            id=run_id,
            template_id=template_id,
            template_name=template_name,
            template_version=template_version,
            params=params,
            status=_run_status(status),
            attempt=0,
            task_id=task_id,
            queue=queue,
            idempotency_key=idempotency_key,
            tenant=tenant,
            secrets=secrets,
            queued_at=now,
            timeout_s=timeout_s,
            created_at=now,
        )
        try:
            with self._writing() as s, s.begin():
                s.add(run)
        except exc.IntegrityError as e:
            if idempotency_key is not None:
                existing = self.find_run_by_idempotency_key(idempotency_key)
                if existing is not None and existing.id != run_id:
                    raise DuplicateRun(idempotency_key, existing.id) from e
            raise to_store_error(e, self.url, f"creating run {run_id}") from e
        except exc.SQLAlchemyError as e:
            raise to_store_error(e, self.url, f"creating run {run_id}") from e

    def get_run(self, run_id: str) -> RunView | None:
        with self._read(f"reading run {run_id}") as s:
            run = s.get(Run, run_id)
            return None if run is None else to_view(RunView, run)

    def find_run_by_idempotency_key(self, idempotency_key: str) -> RunView | None:
        with self._read("looking up an idempotency key") as s:
            run = s.scalar(select(Run).where(Run.idempotency_key == idempotency_key))
            return None if run is None else to_view(RunView, run)

    def start_run(self, run_id: str, *, worker: str) -> RunView:
        """A worker starts (or restarts) the run: running, attempt + 1, heartbeat now.

        ``started_at`` is set by the first start only; ``finished_at`` is cleared.
        """
        now = utcnow()
        with self._write(f"starting run {run_id}") as s:
            result = s.execute(
                update(Run)
                .where(Run.id == run_id)
                .values(
                    status=RunStatus.RUNNING.value,
                    attempt=Run.attempt + 1,
                    started_at=func.coalesce(Run.started_at, literal(now, UTCDateTime())),
                    heartbeat_at=now,
                    finished_at=None,
                    worker=worker,
                )
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 0:
                raise StoreError(f"cannot start run {run_id!r}: no such run")
            return to_view(RunView, s.get_one(Run, run_id))

    def heartbeat(self, run_id: str) -> None:
        """Record that the worker running ``run_id`` is alive."""
        with self._write(f"heartbeat of run {run_id}") as s:
            result = s.execute(
                update(Run)
                .where(Run.id == run_id)
                .values(heartbeat_at=utcnow())
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 0:
                raise StoreError(f"cannot heartbeat run {run_id!r}: no such run")

    def finish_run(
        self,
        run_id: str,
        *,
        status: RunStatus | str,
        outputs: dict | None,
        error_code: str | None = None,
        error_message: str | None = None,
        error_step_path: str | None = None,
    ) -> None:
        """Set the run's status, outputs and error. A terminal status also sets ``finished_at``
        (a non-terminal one, e.g. ``retrying``, leaves it NULL)."""
        status_value = _run_status(status)
        now = utcnow()
        with self._write(f"finishing run {run_id}") as s:
            result = s.execute(
                update(Run)
                .where(Run.id == run_id)
                .values(
                    status=status_value,
                    outputs=outputs,
                    error_code=error_code,
                    error_message=error_message,
                    error_step_path=error_step_path,
                    finished_at=now if RunStatus(status_value).terminal else None,
                    heartbeat_at=now,
                )
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 0:
                raise StoreError(f"cannot finish run {run_id!r}: no such run")

    def delete_run(self, run_id: str) -> None:
        """Delete a run with its step attempts and artifact rows (no-op if it does not exist)."""
        with self._write(f"deleting run {run_id}") as s:
            s.execute(
                delete(Run).where(Run.id == run_id).execution_options(synchronize_session=False)
            )

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
        with self._read("listing runs") as s:
            return [to_view(RunView, run) for run in s.scalars(query)]

    def run_ids_starting_with(self, prefix: str, *, limit: int = 5) -> list[str]:
        """Run ids that begin with ``prefix`` (so people can type a short id)."""
        cleaned = "".join(ch for ch in prefix.lower() if ch in "0123456789abcdef")
        if not cleaned:
            return []
        query = select(Run.id).where(Run.id.startswith(cleaned)).order_by(Run.id).limit(limit)
        with self._read("looking up a run id") as s:
            return list(s.scalars(query))

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
        )

    def _insert_step(self, *, status: StepStatus, reason: str | None = None, **columns: Any) -> int:
        now = utcnow()
        row = StepAttempt(**columns, status=status.value, started_at=now)
        if status is StepStatus.SKIPPED:
            row.finished_at = now
            row.duration_ms = 0.0
            row.url_after = columns["url_before"]
            row.error_message = reason
        with self._write(f"recording step {columns['step_path']} of run {columns['run_id']}") as s:
            s.add(row)
            s.flush()
            return row.id

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
    ) -> None:
        """Move a ``started`` attempt to its final status; sets ``finished_at`` and ``duration_ms``."""
        final = _step_status(status)
        if final not in _FINAL_STEP_STATUSES:
            raise ValueError(f"finish_step needs a final status, got {final.value!r}")
        with self._write(f"finishing step attempt {step_attempt_id}") as s:
            started_at = s.scalar(
                select(StepAttempt.started_at).where(StepAttempt.id == step_attempt_id)
            )
            if started_at is None:
                raise StoreError(f"cannot finish step attempt {step_attempt_id}: no such attempt")
            now = utcnow()
            duration_ms = max(0.0, (now - started_at).total_seconds() * 1000.0)
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
                )
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 0:
                raise StoreError(
                    f"cannot finish step attempt {step_attempt_id}: it is already finished"
                )

    def steps(self, run_id: str) -> list[StepView]:
        """Every step attempt of the run, in the order they were recorded."""
        query = select(StepAttempt).where(StepAttempt.run_id == run_id).order_by(StepAttempt.id)
        with self._read(f"reading steps of run {run_id}") as s:
            return [to_view(StepView, row) for row in s.scalars(query)]

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
    ) -> int:
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
        with self._write(f"recording artifact {path} of run {run_id}") as s:
            s.add(row)
            s.flush()
            return row.id

    def artifacts(self, run_id: str) -> list[ArtifactView]:
        query = select(Artifact).where(Artifact.run_id == run_id).order_by(Artifact.id)
        with self._read(f"reading artifacts of run {run_id}") as s:
            return [to_view(ArtifactView, row) for row in s.scalars(query)]


__all__ = ["DuplicateRun", "Store"]
