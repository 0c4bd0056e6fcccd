"""The engine (browserq.store.engine): URLs, SQLite pragmas, errors without passwords, and which
database errors no retry can fix (they fail at once) and which an outage causes (they are ridden
out): the real server's answers where this machine can produce them, libpq's wording for the
authentication failures a trust-auth test server never sends."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from sqlalchemy import exc

from browserq.errors import StoreError
from browserq.store import Store, normalize_url
from browserq.store.engine import is_permanent, is_transient


def _connect_error(message: str) -> exc.OperationalError:
    return exc.OperationalError("connect", None, psycopg.OperationalError(message))


def _real_connect_error(url: str) -> exc.OperationalError:
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.OperationalError as e:
        return exc.OperationalError("connect", None, e)
    pytest.fail(f"{url} unexpectedly connected")


PERMANENT = [
    'connection failed: connection to server at "10.0.0.5", port 5432 failed: FATAL:  password '
    'authentication failed for user "app"',
    'connection failed: FATAL:  no pg_hba.conf entry for host "10.0.0.9", user "app", database "b"',
    "connection failed: fe_sendauth: no password supplied",
    'connection failed: FATAL:  Peer authentication failed for user "app"',
    'connection failed: FATAL:  permission denied for database "b"',
    'connection is bad: invalid sslmode value: "bogus"',
]
TRANSIENT = [
    'connection failed: connection to server at "127.0.0.1", port 5999 failed: Connection refused',
    "connection failed: FATAL:  the database system is starting up",
    "connection failed: FATAL:  the database system is shutting down",
    "connection failed: FATAL:  sorry, too many clients already",
    "server closed the connection unexpectedly",
    "failed to resolve host 'db': [Errno -3] Temporary failure in name resolution",
]


@pytest.mark.parametrize("message", PERMANENT)
def test_configuration_errors_are_permanent(message: str) -> None:
    error = _connect_error(message)
    assert is_permanent(error) and not is_transient(error)


@pytest.mark.parametrize("message", TRANSIENT)
def test_outage_errors_stay_transient(message: str) -> None:
    error = _connect_error(message)
    assert not is_permanent(error) and is_transient(error)


def test_the_real_servers_answers() -> None:
    missing_db = _real_connect_error("postgresql://postgres@127.0.0.1:5432/browserq_no_such_db")
    missing_role = _real_connect_error("postgresql://browserq_no_such_role@127.0.0.1:5432/postgres")
    no_ssl = _real_connect_error("postgresql://postgres@127.0.0.1:5432/postgres?sslmode=require")
    refused = _real_connect_error("postgresql://postgres@127.0.0.1:1/postgres")
    assert [is_transient(e) for e in (missing_db, missing_role, no_ssl)] == [False, False, False]
    assert is_transient(refused) and not is_permanent(refused)


def test_an_authorization_sqlstate_is_permanent() -> None:
    error = exc.OperationalError("SELECT 1", None, psycopg.errors.InvalidPassword("bad password"))
    assert is_permanent(error) and not is_transient(error)


def test_unreachable_postgres_is_a_store_error_without_password() -> None:
    store = Store("postgresql://browserq:s3cr3t-pw@127.0.0.1:1/browserq", retry_window_s=0)
    try:
        for call in (lambda: store.runs.get_run("x"), store.schema.upgrade, store.schema.current_revision):
            with pytest.raises(StoreError) as caught:
                call()
            message = str(caught.value)
            assert "s3cr3t-pw" not in message
            assert "127.0.0.1:1" in message and "***" in message
            assert "unavailable" in message
        assert "s3cr3t-pw" not in repr(store)
    finally:
        store.dispose()


def test_unmigrated_database_is_a_store_error(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        with pytest.raises(StoreError):
            store.runs.get_run("x")
    finally:
        store.dispose()


def test_urls_are_normalized() -> None:
    assert normalize_url("postgresql://u:p@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("postgres://u:p@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("postgresql+psycopg://h/db").drivername == "postgresql+psycopg"
    assert normalize_url("sqlite:///x.db").drivername == "sqlite"
    with pytest.raises(StoreError, match="BROWSERQ_DATABASE_URL"):
        normalize_url("not a url")


def test_sqlite_pragmas(tmp_path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'nested' / 'dir' / 'p.db'}")
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
    finally:
        store.dispose()


def test_which_errors_are_transient() -> None:
    transient = [
        _dbapi_error(exc.OperationalError, psycopg.OperationalError("connection refused")),
        _dbapi_error(exc.OperationalError, psycopg.errors.AdminShutdown("terminating connection")),
        _dbapi_error(exc.OperationalError, psycopg.errors.DeadlockDetected("deadlock detected")),
        _dbapi_error(exc.OperationalError, sqlite3.OperationalError("database is locked")),
        exc.TimeoutError("QueuePool limit reached"),
    ]
    permanent = [
        _dbapi_error(exc.IntegrityError, psycopg.errors.UniqueViolation("duplicate key")),
        _dbapi_error(exc.ProgrammingError, psycopg.errors.UndefinedTable("no such table")),
        _dbapi_error(exc.OperationalError, sqlite3.OperationalError("no such table: runs")),
        _dbapi_error(exc.IntegrityError, sqlite3.IntegrityError("FOREIGN KEY constraint failed")),
        ValueError("not a database error"),
    ]
    assert [is_transient(e) for e in transient] == [True] * len(transient)
    assert [is_transient(e) for e in permanent] == [False] * len(permanent)


def _dbapi_error(cls: type[exc.DBAPIError], orig: Exception) -> exc.DBAPIError:
    return cls("SELECT 1", None, orig)
