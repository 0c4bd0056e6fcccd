"""Scratch PostgreSQL databases: create one under a unique name, build its SQLAlchemy URL, drop it.

The server is the machine's real PostgreSQL (trust auth); ``BROWSERQ_TEST_PG_ADMIN_URL`` (or the
older ``BROWSERQ_TEST_PG_ADMIN``) points at another one. A database is dropped ``WITH (FORCE)``:
a worker a test killed may still hold a connection to it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from psycopg import sql

ADMIN_URL = (
    os.environ.get("BROWSERQ_TEST_PG_ADMIN_URL")
    or os.environ.get("BROWSERQ_TEST_PG_ADMIN")
    or "postgresql://postgres@127.0.0.1:5432/postgres"
)


def database_url(name: str, admin_url: str = ADMIN_URL) -> str:
    """The SQLAlchemy (psycopg 3) URL of database ``name`` on the admin URL's server."""
    base = admin_url.rsplit("/", 1)[0]
    return f"{base}/{name}".replace("postgresql://", "postgresql+psycopg://", 1)


def scratch_name(prefix: str) -> str:
    """A database name no other test process uses (pid + random suffix)."""
    return f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"


def admin_connection(admin_url: str = ADMIN_URL) -> psycopg.Connection:
    """An autocommit connection to the maintenance database; fails the test (not an error) if the
    server is down, with the URL it tried."""
    try:
        return psycopg.connect(admin_url, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as e:
        pytest.fail(f"PostgreSQL is not reachable at {admin_url}: {e}", pytrace=False)


def create_database(name: str, conn: psycopg.Connection | None = None) -> str:
    """(Re)create an empty database ``name`` (a leftover of an earlier session is dropped first);
    returns its URL. ``conn``: an admin connection to reuse, else one is opened for this call."""
    if conn is None:
        with admin_connection() as own:
            return create_database(name, own)
    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return database_url(name)


def drop_database(name: str, conn: psycopg.Connection | None = None) -> None:
    """Drop database ``name`` even while something is still connected to it."""
    if conn is None:
        with admin_connection() as own:
            return drop_database(name, own)
    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    return None


@contextmanager
def scratch_database(prefix: str) -> Iterator[str]:
    """A fresh database for the body (its URL), dropped afterwards."""
    name = scratch_name(prefix)
    url = create_database(name)
    try:
        yield url
    finally:
        drop_database(name)
