"""Fixtures for the run-store tests: every database test runs on SQLite *and* PostgreSQL.

PostgreSQL is expected at ``BROWSERQ_TEST_PG_ADMIN_URL`` (default: postgres@127.0.0.1:5432,
trust auth). Throwaway databases named ``browserq_store_<pid>[_<n>]`` are created here and
dropped when the session ends. If PostgreSQL is down, its tests fail; they are never skipped.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

from browserq.store import Store
from tests.support.postgres import ADMIN_URL as PG_ADMIN_URL
from tests.support.postgres import admin_connection, create_database, drop_database

BACKENDS = ("sqlite", "postgresql")
TABLES = (
    "webhook_attempts",
    "webhook_deliveries",
    "live_tokens",
    "handoffs",
    "artifacts",
    "step_attempts",
    "run_transitions",
    "runs",
    "batches",
    "template_versions",
    "templates",
    "identities",
)


class PgDatabases:
    """Creates throwaway PostgreSQL databases and drops them all at the end of the session."""

    def __init__(self) -> None:
        self.prefix = f"browserq_store_{os.getpid()}"
        self._counter = itertools.count(1)
        self._created: list[str] = []
        self._admin: psycopg.Connection | None = None

    def _connection(self) -> psycopg.Connection:
        if self._admin is None:
            self._admin = admin_connection(PG_ADMIN_URL)
        return self._admin

    def create(self, name: str | None = None) -> str:
        dbname = name or f"{self.prefix}_{next(self._counter)}"
        url = create_database(dbname, self._connection())
        self._created.append(dbname)
        return url

    def drop_all(self) -> None:
        if self._admin is None:
            return
        for dbname in self._created:
            drop_database(dbname, self._admin)
        self._admin.close()


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[PgDatabases]:
    databases = PgDatabases()
    yield databases
    databases.drop_all()


@pytest.fixture(scope="session")
def pg_shared_url(pg_databases: PgDatabases) -> str:
    """One migrated PostgreSQL database for the whole session (tables emptied per test)."""
    url = pg_databases.create(pg_databases.prefix)
    store = Store(url)
    store.schema.upgrade()
    store.dispose()
    return url


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def empty_url(backend: str, tmp_path: Path, pg_databases: PgDatabases) -> str:
    """The URL of a brand-new, empty database."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'empty.db'}"
    return pg_databases.create()


@pytest.fixture
def new_empty_url(backend: str, tmp_path: Path, pg_databases: PgDatabases) -> Callable[[], str]:
    counter = itertools.count(1)

    def make() -> str:
        if backend == "sqlite":
            return f"sqlite:///{tmp_path / f'db{next(counter)}.db'}"
        return pg_databases.create()

    return make


@pytest.fixture
def store_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A migrated database with empty tables."""
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'store.db'}"
        store = Store(url)
        store.schema.upgrade()
        store.dispose()
        return url
    url = request.getfixturevalue("pg_shared_url")
    store = Store(url)
    with store.engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE"))
    store.dispose()
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url)
    yield s
    s.dispose()


# --- an S3-compatible server for the object-store artifact tests (tests/store/test_s3*.py) -------
@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """moto's standalone S3 server (tests/support/s3.py), with its credentials in this process's
    environment (boto3 reads them there, as from any AWS_* setup)."""
    from tests.support.s3 import s3_with_credentials

    with s3_with_credentials(tmp_path_factory.mktemp("moto") / "moto.log") as url:
        yield url
