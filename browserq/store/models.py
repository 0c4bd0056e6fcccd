"""The run store's schema: templates, runs, step attempts and artifacts (SQLAlchemy 2 typed ORM).

Schema history: ``0001`` templates/runs/step_attempts/artifacts; ``0002`` durable runs (leases
with fencing tokens, cancellation, the ``run_transitions`` log and ``batches``); ``0003``
``identities`` (named visitor identities, leased to one run at a time); ``0004``
``template_versions`` (a used ``name@version`` pinned to its content hash) and
``runs.template_hash``; ``0005`` ``warnings`` on runs and step attempts (a limit cut the result
short); ``0006`` ``events`` on step attempts (dialogs the run answered); ``0007`` a person in
the loop: ``handoffs``, ``live_tokens``, ``webhook_deliveries`` and ``webhook_attempts``, with
``runs.human_wait_s`` and ``runs.notify_url`` (:mod:`browserq.store.human_models`).

Types are portable between PostgreSQL (production) and SQLite (embedded default):

* timestamps are ``UTCDateTime``: ``timestamptz`` on PostgreSQL, and always handed back as
  timezone-aware UTC datetimes (SQLite stores naive UTC);
* JSON columns are ``JSON`` with a ``JSONB`` variant on PostgreSQL; Python ``None`` is SQL NULL;
* big-integer primary keys fall back to ``INTEGER`` on SQLite so they autoincrement (rowid).

Every constraint and index has an explicit, stable name (see ``NAMING_CONVENTION``), which the
Alembic migrations in ``alembic/versions`` repeat verbatim.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from browserq.store.forward_clock import ForwardClock

NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    RETRYING = "retrying"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    NEEDS_REVIEW = "needs_review"
    #: A person was asked to take over (captcha, one-time code); the run keeps its context,
    #: its lease and its worker slot until they finish, give up or the handoff times out.
    WAITING_FOR_HUMAN = "waiting_for_human"

    @property
    def terminal(self) -> bool:
        """True when the run will not be started again."""
        return self in FINISHED_RUN_STATUSES


#: The statuses a run ends in (``browserq.store.states.FINISHED``): the one definition.
FINISHED_RUN_STATUSES = frozenset(
    {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.NEEDS_REVIEW}
)


class StepStatus(StrEnum):
    STARTED = "started"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    #: The step was ``started`` when its worker died: whether it took effect is unknown.
    UNKNOWN = "unknown"


class ArtifactKind(StrEnum):
    """The usual artifact kinds (the store accepts any short string)."""

    SCREENSHOT = "screenshot"
    FAILURE_SCREENSHOT = "failure_screenshot"
    DOM = "dom"
    CONSOLE = "console"
    NETWORK = "network"
    TRACE = "trace"


#: The time every row is stamped with: this process's UTC clock, never stepping back (see
#: :mod:`browserq.store.forward_clock`).
utcnow = ForwardClock()


class UTCDateTime(TypeDecorator[datetime]):
    """``DateTime(timezone=True)`` that only accepts aware datetimes and returns them in UTC."""

    impl = DateTime
    cache_ok = True

    def __init__(self) -> None:
        super().__init__(timezone=True)

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                f"naive datetime {value!r}: the store only takes timezone-aware values"
            )
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


#: JSON everywhere, JSONB on PostgreSQL; ``None`` is stored as SQL NULL, not JSON ``null``.
JSONType = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
#: BIGINT primary keys; INTEGER on SQLite so the column aliases the autoincrementing rowid.
BigIntPK = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class TemplateRecord(Base):
    """One version of a template as it was when a run used it (the exact YAML)."""

    __tablename__ = "templates"
    __table_args__ = (UniqueConstraint("name", "version", "content_hash"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    version: Mapped[str] = mapped_column(String(100))
    content_hash: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class TemplateVersion(Base):
    """A ``name@version`` pinned, by its first run, to the content hash of its canonical body.

    Versions are immutable once used: a producer whose file has another hash is refused
    (``TemplateChanged``) and must bump the version. ``template_id`` is the body first used.
    """

    __tablename__ = "template_versions"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    version: Mapped[str] = mapped_column(String(100), primary_key=True)
    content_hash: Mapped[str] = mapped_column(String(64))
    template_id: Mapped[int] = mapped_column(Integer, ForeignKey("templates.id"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Batch(Base):
    """A group of runs submitted together, with an optional failure-rate circuit breaker."""

    __tablename__ = "batches"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    template_name: Mapped[str] = mapped_column(String(200))
    template_version: Mapped[str] = mapped_column(String(100))
    total: Mapped[int] = mapped_column(Integer)
    #: e.g. ``{"min_runs": 10, "max_failure_rate": 0.5}``; NULL: no breaker.
    breaker: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    breaker_tripped_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    breaker_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_status_created_at", "status", "created_at"),
        Index("ix_runs_template_name_template_version", "template_name", "template_version"),
        Index("ix_runs_created_at", "created_at"),
        Index("ix_runs_status_lease_expires_at", "status", "lease_expires_at"),
        Index("ix_runs_batch_id", "batch_id"),
        Index("ix_runs_status_finished_at", "status", "finished_at"),  # 0008: retention
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    template_id: Mapped[int] = mapped_column(Integer, ForeignKey("templates.id"))
    template_name: Mapped[str] = mapped_column(String(200))
    template_version: Mapped[str] = mapped_column(String(100))
    params: Mapped[dict[str, Any]] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(20))
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    task_id: Mapped[str | None] = mapped_column(String(200))
    worker: Mapped[str | None] = mapped_column(String(200))
    queue: Mapped[str | None] = mapped_column(String(200))
    idempotency_key: Mapped[str | None] = mapped_column(String(200), unique=True)
    tenant: Mapped[str | None] = mapped_column(String(200))
    queued_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    timeout_s: Mapped[float] = mapped_column(Float)
    outputs: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    error_code: Mapped[str | None] = mapped_column(String(40))
    error_message: Mapped[str | None] = mapped_column(Text)
    error_step_path: Mapped[str | None] = mapped_column(String(200))
    checkpoint: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    secrets: Mapped[str | None] = mapped_column(Text)  # Fernet token of the secret params
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # --- 0002: durable runs ---
    #: The worker holding the lease (NULL: nobody); the lease is live until ``lease_expires_at``.
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    #: Fencing token: bumped by every lease grant and by leaving ``running``; never decreases.
    lease_token: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: How many times the run was taken over from a dead or expired worker.
    takeovers: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    cancel_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    cancel_reason: Mapped[str | None] = mapped_column(Text)
    batch_id: Mapped[str | None] = mapped_column(String(32), ForeignKey("batches.id"))
    #: The last time a task message was sent for the run.
    enqueued_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: Why the run is in its current status (e.g. why it needs review).
    status_reason: Mapped[str | None] = mapped_column(Text)
    identity: Mapped[str | None] = mapped_column(String(100))  # a named identity the run asked for
    identity_pool: Mapped[str | None] = mapped_column(String(100))  # …or a pool to lease one from
    # --- 0004: template pinning ---
    #: sha256 of the canonical body of the template the run executes (what ``show`` prints).
    template_hash: Mapped[str | None] = mapped_column(String(64))
    # --- 0005: warnings ---
    #: ``[{"step", "code", "message"}]``: where a limit cut the result short (a repeat stopped at
    #: ``max`` with its stop selector still there, an extract ``limit``…). NULL: none.
    warnings: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType)
    # --- 0007: a person in the loop ---
    #: The longest the run may wait for people in all (its handoffs' budget): added to
    #: ``timeout_s`` for Celery's time limits, never counted against ``timeout_s`` itself.
    human_wait_s: Mapped[float | None] = mapped_column(Float)
    #: Where the run's outcome is POSTed (``.delay(notify=…)`` or the template's ``settings.notify``).
    notify_url: Mapped[str | None] = mapped_column(Text)


class RunTransition(Base):
    """One status change of a run (append-only); ``from_status`` is NULL for the creation."""

    __tablename__ = "run_transitions"
    __table_args__ = (Index("ix_run_transitions_run_id_id", "run_id", "id"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    from_status: Mapped[str | None] = mapped_column(String(20))
    to_status: Mapped[str] = mapped_column(String(20))
    reason: Mapped[str] = mapped_column(Text)
    worker: Mapped[str | None] = mapped_column(String(200))


class StepAttemptRecord(Base):
    """One attempt of one step. Append-only: the only update is ``started`` → final status."""

    __tablename__ = "step_attempts"
    __table_args__ = (
        Index("ix_step_attempts_run_id_id", "run_id", "id"),
        Index(
            "ix_step_attempts_error_code",
            "error_code",
            postgresql_where=text("status = 'failed'"),
            sqlite_where=text("status = 'failed'"),
        ),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    run_attempt: Mapped[int] = mapped_column(Integer)
    step_path: Mapped[str] = mapped_column(String(200))
    step_id: Mapped[str | None] = mapped_column(String(200))
    attempt: Mapped[int] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(20))
    inputs: Mapped[dict[str, Any]] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(20))
    error_code: Mapped[str | None] = mapped_column(String(40))
    error_message: Mapped[str | None] = mapped_column(Text)
    retryable: Mapped[bool | None] = mapped_column(Boolean)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    duration_ms: Mapped[float | None] = mapped_column(Float)
    url_before: Mapped[str | None] = mapped_column(Text)
    url_after: Mapped[str | None] = mapped_column(Text)
    output: Mapped[Any | None] = mapped_column(JSONType)
    #: 0005: ``[{"code", "message"}]`` when the step succeeded but not in full.
    warnings: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType)
    #: 0006: what the page did during the attempt that the run answered, e.g. dialogs:
    #: ``[{"type": "dialog", "dialog": "confirm", "message", "answer", "prompt"?}]``.
    events: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType)


class Artifact(Base):
    __tablename__ = "artifacts"
    __table_args__ = (
        Index("ix_artifacts_run_id", "run_id"),
        Index("ix_artifacts_step_attempt_id", "step_attempt_id"),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    step_attempt_id: Mapped[int | None] = mapped_column(
        BigInteger, ForeignKey("step_attempts.id", ondelete="SET NULL")
    )
    kind: Mapped[str] = mapped_column(String(30))
    path: Mapped[str] = mapped_column(Text)
    content_type: Mapped[str] = mapped_column(String(200))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Identity(Base):
    """What a site sees as one visitor: a sticky proxy, a fingerprint seed, locale/timezone and
    the browser storage (Playwright ``storage_state`` JSON, kept only as a Fernet token).

    Leased to one run at a time (``lease_run_id`` until ``lease_expires_at``); ``lease_token``
    fences the holder's writes and is bumped by every lease grant.
    """

    __tablename__ = "identities"
    #: (pool, lease_expires_at) also serves lookups by pool alone (its leftmost column).
    __table_args__ = (Index("ix_identities_pool_lease_expires_at", "pool", "lease_expires_at"),)

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    pool: Mapped[str | None] = mapped_column(String(100))
    fingerprint_seed: Mapped[str] = mapped_column(String(64))
    proxy_id: Mapped[str | None] = mapped_column(String(64))
    region: Mapped[str | None] = mapped_column(String(20))
    locale: Mapped[str | None] = mapped_column(String(20))
    timezone: Mapped[str | None] = mapped_column(String(64))
    #: Fernet token of the storage_state JSON; the store never sees it in clear.
    storage_encrypted: Mapped[str | None] = mapped_column(Text)
    storage_saved_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    lease_run_id: Mapped[str | None] = mapped_column(String(32))
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    lease_token: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    uses: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: Set: the identity is never leased (e.g. the site banned it); NULL: usable.
    disabled_reason: Mapped[str | None] = mapped_column(Text)


metadata = Base.metadata
