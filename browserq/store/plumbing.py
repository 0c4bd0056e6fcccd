"""The store's transaction plumbing, shared by every repository: one engine, one short transaction
per call, retried as a whole on transient database errors, plus row locking and lease fencing.

Database outages
    Every transaction is retried on connection-level errors (and SQLite's "database is locked",
    PostgreSQL deadlocks), with exponential backoff from 0.2 s to 2 s, for up to
    ``retry_window_s``; then :class:`StoreUnavailable` is raised. A commit whose acknowledgement
    was lost may have applied, so every retried write first looks for its own earlier effect
    (the ``retried`` flag its body receives). A connection that stops answering counts as lost
    (:mod:`browserq.store.answering`); a run whose store stays unavailable past the window stops
    its attempt and is tried again later (``browserq.tasks.run_task``).

Every repository (:mod:`browserq.store.runs`, :mod:`~browserq.store.leases`, …) is handed one
:class:`Database` in its constructor; :class:`browserq.store.Store` builds it and them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn, TypeVar, TypeVarTuple, cast

import structlog
from sqlalchemy import CursorResult, Engine, Result, Select, exc, select
from sqlalchemy.orm import Session, sessionmaker

from browserq.errors import StoreError
from browserq.store.clock import db_now
from browserq.store.engine import (
    SQLITE_BEGIN_OPTION,
    DbTimeouts,
    create_store_engine,
    is_disconnect,
    is_transient,
    mask_url,
    normalize_url,
    scrub,
    to_store_error,
)
from browserq.store.errors import LeaseLost, StoreUnavailable
from browserq.store.models import Run, RunStatus

log = structlog.get_logger(__name__)

T = TypeVar("T")
Columns = TypeVarTuple("Columns")

#: Backoff between tries of a transaction that hit a transient database error.
RETRY_FIRST_DELAY_S = 0.2
RETRY_MAX_DELAY_S = 2.0
DEFAULT_RETRY_WINDOW_S = 60.0


def run_status_value(status: RunStatus | str) -> str:
    """The status as stored; a ValueError naming the allowed ones for anything else."""
    try:
        return RunStatus(status).value
    except ValueError:
        allowed = ", ".join(s.value for s in RunStatus)
        raise ValueError(f"unknown run status {status!r}; expected one of {allowed}") from None


def changed_rows(result: Result[Any]) -> int:
    """How many rows an UPDATE or DELETE changed. ``Session.execute`` is typed as returning a
    ``Result``; for a DML statement it is always a ``CursorResult``, which counts them."""
    return cast("CursorResult[Any]", result).rowcount


def first_line(error: BaseException) -> str:
    """The first line of a (SQLAlchemy) error's message: enough for a log line or an error."""
    orig = getattr(error, "orig", None)
    text = str(orig if orig is not None else error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class Database:
    """The engine, the retried transactions, the locking/fencing helpers and the database's clock
    every repository is handed. ``database_url``: any SQLAlchemy URL (PostgreSQL or SQLite).

    ``retry_window_s``: how long a transaction keeps being retried while the database is
    unreachable (or, on SQLite, locked) before :class:`StoreUnavailable` is raised.
    ``timeouts``: PostgreSQL's statement, lock and idle-in-transaction limits (default
    :class:`~browserq.store.engine.DbTimeouts`).
    ``announce``: told the ids of the webhook deliveries a transaction queued, once it committed
    (the :class:`~browserq.store.Store` hands them to its relay; None: the sweep sends them).
    """

    def __init__(
        self,
        database_url: str,
        *,
        echo: bool = False,
        retry_window_s: float = DEFAULT_RETRY_WINDOW_S,
        timeouts: DbTimeouts | None = None,
        announce: Callable[[list[int]], None] | None = None,
    ) -> None:
        if retry_window_s < 0:
            raise ValueError(f"retry_window_s must be >= 0, got {retry_window_s}")
        self.url = normalize_url(database_url)
        self.retry_window_s = float(retry_window_s)
        self.engine: Engine = create_store_engine(self.url, echo=echo, timeouts=timeouts)
        # Writes ask SQLite for the write lock when the transaction begins (BEGIN IMMEDIATE), so
        # read-then-write transactions never fail with SQLITE_BUSY_SNAPSHOT; ignored elsewhere.
        self._write_engine = self.engine.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
        self._reading = sessionmaker(self.engine, expire_on_commit=False)
        self._writing = sessionmaker(self._write_engine, expire_on_commit=False)
        #: PostgreSQL (row locks with ``FOR UPDATE``), else SQLite (the write lock is the lock).
        self.pg = self.engine.dialect.name == "postgresql"
        self._announce = announce

    @property
    def masked_url(self) -> str:
        return mask_url(self.url)

    @property
    def dialect(self) -> str:
        """``"postgresql"`` or ``"sqlite"``."""
        return self.engine.dialect.name

    def dispose(self) -> None:
        """Close every pooled connection (call before forking, and at shutdown)."""
        self.engine.dispose()

    # --- retried transactions ----------------------------------------------------------------
    def retry(
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
                    error=scrub(first_line(e), self.url),
                )
                time.sleep(pause)
                delay = min(delay * 2, RETRY_MAX_DELAY_S)

    def _unavailable(
        self, error: BaseException, action: str, elapsed: float, tries: int
    ) -> StoreUnavailable:
        retried = f" (gave up after {elapsed:.1f}s and {tries} tries; retry_window_s={self.retry_window_s:g})"
        message = (
            f"{action}: database {self.masked_url} is unavailable"
            f"{retried if tries > 1 else ''}: {first_line(error)}"
        )
        return StoreUnavailable(scrub(message, self.url))

    def tx(
        self,
        action: str,
        body: Callable[[Session, bool], T],
        *,
        write: bool,
        passthrough: tuple[type[BaseException], ...] = (),
    ) -> T:
        """Run ``body(session, retried)`` in one transaction, retried as a whole (see retry)."""
        maker = self._writing if write else self._reading

        def attempt(retried: bool) -> T:
            with maker() as s:
                with s.begin():
                    result = body(s, retried)
                    queued = s.info.pop("webhooks", None)
                    if queued:
                        s.flush()  # the ids
                if queued:
                    self._announce_webhooks([row.id for row in queued])
                return result

        return self.retry(action, attempt, passthrough=passthrough)

    def _announce_webhooks(self, ids: list[int]) -> None:
        """After the commit: hand the new deliveries on (a failure leaves them to the sweep)."""
        if self._announce is None:
            return
        try:
            self._announce(ids)
        except Exception as exc:
            log.warning("webhook deliveries not sent now; the next sweep sends them", ids=ids,
                        error=first_line(exc))

    def read(self, action: str, body: Callable[[Session], T]) -> T:
        """``body(session)`` in one read-only transaction, retried as a whole."""
        return self.tx(action, lambda s, _retried: body(s), write=False)

    def now(self) -> datetime:
        """The database's clock, which every lease expiry is written in (compare with this)."""
        return self.read("reading the database's clock", db_now)

    # --- locking and fencing -----------------------------------------------------------------
    def locked(self, query: Select[*Columns]) -> Select[*Columns]:
        """``query`` with ``FOR UPDATE`` on PostgreSQL (SQLite writers already hold the lock)."""
        return query.with_for_update() if self.pg else query

    def lock_run(self, s: Session, run_id: str) -> Run | None:
        """The run's row, locked for the rest of the transaction (None: no such run)."""
        return s.scalars(self.locked(select(Run).where(Run.id == run_id))).one_or_none()

    @staticmethod
    def fence_run(run: Run, token: int, action: str) -> None:
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

    def fence(self, s: Session, run_id: str, token: int, action: str) -> None:
        """Lock the run row and check that ``token`` is still its lease token (else LeaseLost)."""
        query = select(Run.lease_token, Run.lease_owner, Run.status).where(Run.id == run_id)
        row = s.execute(self.locked(query)).one_or_none()
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


def moved_call(attribute: str) -> Callable[..., NoReturn]:
    """The ``__call__`` of a repository named like a method the Store had (``store.steps(run_id)``
    once read a run's steps; ``store.steps`` is the repository now): a TypeError naming the new
    spelling instead of "object is not callable"."""

    def call(_self: object, *_args: object, **_kwargs: object) -> NoReturn:
        raise TypeError(f"Store.{attribute}() moved: use store.{attribute}.{attribute}()")

    return call


def public_names(cls: type) -> list[str]:
    """The public methods and properties a class defines (a repository's surface)."""
    return sorted(name for name in dir(cls) if not name.startswith("_"))


__all__ = [
    "DEFAULT_RETRY_WINDOW_S",
    "RETRY_FIRST_DELAY_S",
    "RETRY_MAX_DELAY_S",
    "Database",
    "first_line",
    "moved_call",
    "public_names",
    "run_status_value",
]
