"""Which database errors no retry can fix (they fail at once) and which an outage causes (they
are ridden out): the real server's answers where this machine can produce them, libpq's wording
for the authentication failures a trust-auth test server never sends."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import exc

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
