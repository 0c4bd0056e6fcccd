"""Engine creation, URL handling and error translation shared by the Store and the migrations."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event, exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import StaticPool

from browserq import recordable
from browserq.errors import StoreError
from browserq.store.answering import DbTimeouts, install_timeouts

#: How long a SQLite connection waits for another writer before failing ("database is locked").
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: A pooled PostgreSQL connection idle longer than this is pinged before it is handed out. A busy
#: connection is not: a ping per checkout was one more round trip — and one more transaction in
#: the server's counters — for every transaction of every run, and a connection that died while
#: in use is handled anyway (the store retries the whole transaction on a new one).
PG_PING_AFTER_IDLE_S = 30.0
#: SQLSTATEs worth retrying the whole transaction for (besides every connection-level error):
#: admin/crash shutdown, "the database system is starting up", too many connections,
#: serialization failure and deadlock, and our own timeouts — a statement cancelled by
#: statement_timeout, a lock not granted within lock_timeout, a session ended by
#: idle_in_transaction_session_timeout (the transaction was rolled back in every case).
PG_TRANSIENT_SQLSTATES = frozenset(
    {"57P01", "57P02", "57P03", "53300", "40001", "40P01", "57014", "55P03", "25P03"}
)
#: SQLSTATE classes that no retry can fix: invalid authorization (28), unknown database (3D).
PG_PERMANENT_SQLSTATE_CLASSES = ("28", "3D")
#: What libpq reports when a connection can never succeed as configured. A failed connection
#: carries no SQLSTATE on the client side, so its message is all there is to go on; anything not
#: matched here (refused, reset, timeout, "the database system is starting up", too many clients,
#: an unresolvable host) stays transient and is ridden out for the retry window.
PG_PERMANENT_CONNECT_ERRORS = re.compile(
    "|".join(
        (
            r'database "[^"]*" does not exist',
            r'role "[^"]*" does not exist',
            r"password authentication failed",
            r"(?:peer|ident|ldap|radius|cert|gss|sspi|pam|scram|md5) authentication failed",
            r"no pg_hba\.conf entry",
            r"no password supplied",
            r"permission denied for database",
            r"does not have CONNECT privilege",
            r"server does not support SSL",
            r"invalid (?:port number|sslmode value|connection option|integer value)",
        )
    ),
    re.IGNORECASE,
)

#: Execution option read by the SQLite ``begin`` hook: "DEFERRED" (reads) or "IMMEDIATE" (writes).
SQLITE_BEGIN_OPTION = "browserq_sqlite_begin"


def normalize_url(database_url: str | URL) -> URL:
    """Parse a database URL; ``postgresql://`` and ``postgres://`` use psycopg 3."""
    try:
        url = make_url(database_url)
    except exc.ArgumentError as e:
        raise StoreError(f"BROWSERQ_DATABASE_URL is not a valid database URL: {e}") from None
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    return url


def mask_url(url: str | URL) -> str:
    """The URL with its password replaced by ``***``: safe for logs and error messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except exc.ArgumentError:
        return "<invalid database URL>"


def _json_serializer(value: Any) -> str:
    # Whatever a page returned (NUL, lone surrogates, NaN, huge ints, cycles, datetimes) is
    # stored in the JSON form browserq.recordable gives it, never a crash.
    return recordable.dumps(value)


def _clean_parameter(value: Any) -> Any:
    return recordable.clean_text(value) if isinstance(value, str) else value


def _clean_parameters(parameters: Any) -> Any:
    """Text parameters without NUL or lone surrogates (PostgreSQL and UTF-8 reject them)."""
    if isinstance(parameters, dict):
        return {key: _clean_parameter(value) for key, value in parameters.items()}
    if isinstance(parameters, tuple | list):
        return type(parameters)(
            _clean_parameters(p) if isinstance(p, dict | tuple | list) else _clean_parameter(p)
            for p in parameters
        )
    return parameters


def _install_text_cleaning(engine: Engine) -> None:
    """Every text value bound to a statement (titles, URLs, error messages, reasons) is cleaned
    here, at the one point all writes pass; JSON columns are cleaned by the serializer."""

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _clean(
        _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool
    ) -> tuple[str, Any]:
        return statement, _clean_parameters(parameters)


def _is_memory_sqlite(url: URL) -> bool:
    return not url.database or url.database == ":memory:" or url.query.get("mode") == "memory"


def create_store_engine(
    database_url: str | URL, *, echo: bool = False, poolclass: type | None = None,
    timeouts: DbTimeouts | None = None,
) -> Engine:
    """An engine tuned for the run store.

    SQLite: WAL, ``busy_timeout``, ``foreign_keys=ON``, ``check_same_thread=False``, and SQLAlchemy
    (not the sqlite3 module) emits BEGIN: ``BEGIN IMMEDIATE`` when the connection carries the
    execution option ``{SQLITE_BEGIN_OPTION: "IMMEDIATE"}`` (writes take the lock up front and
    wait for it), a plain deferred ``BEGIN`` otherwise. That makes transactions (and DDL) real
    transactions on every Python version. PostgreSQL: a ping for connections idle over
    ``PG_PING_AFTER_IDLE_S``, a connect timeout, TCP liveness options and ``timeouts`` (default
    :class:`DbTimeouts`), see :mod:`browserq.store.answering`.
    """
    url = normalize_url(database_url)
    kwargs: dict[str, Any] = {"echo": echo, "json_serializer": _json_serializer}
    if poolclass is not None:
        kwargs["poolclass"] = poolclass
    backend = url.get_backend_name()
    if backend == "sqlite":
        kwargs["connect_args"] = {
            "check_same_thread": False,
            "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
        }
        if _is_memory_sqlite(url):
            kwargs.setdefault("poolclass", StaticPool)
        elif url.database and not url.database.startswith("file:"):
            folder = Path(url.database).expanduser().parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(
                    f"cannot use database {mask_url(url)}: cannot create its folder {folder}: "
                    f"{e.strerror or e}"
                ) from None
    try:
        engine = create_engine(url, **kwargs)
    except (exc.ArgumentError, exc.NoSuchModuleError, ImportError) as e:
        raise StoreError(f"cannot use database {mask_url(url)}: {e}") from None
    if backend == "sqlite":
        _install_sqlite_hooks(engine)
    elif backend == "postgresql":
        install_timeouts(engine, timeouts or DbTimeouts())
        _install_idle_ping(engine, PG_PING_AFTER_IDLE_S)
    _install_text_cleaning(engine)
    return engine


def _install_idle_ping(engine: Engine, idle_s: float) -> None:
    """``pool_pre_ping``, but only for a connection that sat in the pool longer than ``idle_s``:
    a dead one is replaced before use (SQLAlchemy retries a checkout that raises
    ``DisconnectionError`` with a new connection)."""

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["browserq_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("browserq_idle_since")
        if since is None or time.monotonic() - since < idle_s:
            return
        try:
            with dbapi_connection.cursor() as cursor:
                cursor.execute("select 1")
            dbapi_connection.rollback()
        except Exception as e:
            raise exc.DisconnectionError(f"pooled connection idle {time.monotonic() - since:.0f} s is gone: {e}") from e


def _install_sqlite_hooks(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Disable the sqlite3 module's own (legacy) transaction handling; see _on_begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys = ON")
            _enable_wal(cursor)
            cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        mode = connection.get_execution_options().get(SQLITE_BEGIN_OPTION, "DEFERRED")
        if mode not in ("DEFERRED", "IMMEDIATE", "EXCLUSIVE"):
            raise ValueError(f"bad {SQLITE_BEGIN_OPTION}: {mode!r}")
        connection.exec_driver_sql(f"BEGIN {mode}")


def _enable_wal(cursor: Any, attempts: int = 50) -> None:
    """Switch to WAL (persistent once set). Switching needs a moment with no other connection
    mid-transaction, and SQLite answers "locked" at once instead of waiting: retry briefly."""
    import sqlite3
    import time

    for attempt in range(attempts):
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
                return
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.1)


def _detail(error: BaseException) -> str:
    orig = getattr(error, "orig", None)
    text = str(orig if orig is not None else error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def scrub(message: str, url: URL) -> str:
    """Remove the URL's password from ``message`` wherever it appears."""
    if url.password:
        for secret in {str(url.password), quote(str(url.password), safe="")}:
            if secret:
                message = message.replace(secret, "***")
    return message


def is_permanent(error: BaseException) -> bool:
    """True for database errors that say the configuration is wrong, not that the server is away:
    an unknown database or role, failed authentication, a missing pg_hba.conf entry, an invalid
    connection option. Retrying those only delays the message, so they fail at once."""
    orig = getattr(error, "orig", None)
    if orig is None or not type(orig).__module__.startswith("psycopg"):
        return False
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate is not None:
        return sqlstate.startswith(PG_PERMANENT_SQLSTATE_CLASSES)
    return PG_PERMANENT_CONNECT_ERRORS.search(str(orig)) is not None


def is_transient(error: BaseException) -> bool:
    """True for errors after which the same transaction may simply be tried again.

    Connection-level failures (refused, reset, "server closed the connection unexpectedly",
    "terminating connection due to administrator command", pool checkout timeouts), PostgreSQL
    deadlocks and serialization failures, and SQLite's "database is locked". Never integrity or
    programming errors, nor :func:`is_permanent` ones: those would fail the same way again.
    """
    if isinstance(error, exc.TimeoutError):  # the pool had no connection to give
        return True
    if not isinstance(error, exc.DBAPIError) or isinstance(error, exc.IntegrityError):
        return False
    if is_permanent(error):
        return False
    if error.connection_invalidated:
        return True
    orig = error.orig
    if orig is None:
        return False
    module = type(orig).__module__
    if module.startswith("psycopg"):
        import psycopg

        if not isinstance(orig, psycopg.OperationalError | psycopg.InterfaceError):
            return False
        sqlstate = getattr(orig, "sqlstate", None)
        # No SQLSTATE: the failure happened on the client side of the wire (connect, I/O).
        return sqlstate is None or sqlstate.startswith("08") or sqlstate in PG_TRANSIENT_SQLSTATES
    if module.startswith("sqlite3"):
        import sqlite3

        text = str(orig).lower()
        return isinstance(orig, sqlite3.OperationalError) and ("locked" in text or "busy" in text)
    return False


def is_disconnect(error: BaseException) -> bool:
    """True when the error means the connection (or the server) is gone, not just busy."""
    if isinstance(error, exc.DBAPIError) and error.connection_invalidated:
        return True
    orig = getattr(error, "orig", None)
    if orig is not None and type(orig).__module__.startswith("psycopg"):
        sqlstate = getattr(orig, "sqlstate", None)
        return sqlstate is None or sqlstate.startswith(("08", "57P"))
    return False


def to_store_error(error: exc.SQLAlchemyError, url: URL, action: str) -> StoreError:
    """A StoreError for ``error`` that names the database (password masked) and what failed."""
    if is_permanent(error):
        message = (
            f"{action}: database {mask_url(url)} cannot be used: {_detail(error)} "
            "(check BROWSERQ_DATABASE_URL: database name, user, password, options)"
        )
    elif isinstance(error, exc.OperationalError):
        message = f"{action}: database {mask_url(url)} is unavailable: {_detail(error)}"
    else:
        message = f"{action}: database {mask_url(url)} error: {_detail(error)}"
    return StoreError(scrub(message, url))


@contextmanager
def translate_errors(url: URL, action: str) -> Iterator[None]:
    """Re-raise SQLAlchemy errors as StoreError (see :func:`to_store_error`)."""
    try:
        yield
    except exc.SQLAlchemyError as e:
        raise to_store_error(e, url, action) from e
