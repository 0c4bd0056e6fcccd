"""Alembic environment for browserq's run store (PostgreSQL and SQLite).

The URL comes from ``config.attributes["database_url"]``, then ``-x database_url=...``, then
``browserq.settings.get_settings().database_url``; a caller may instead hand over an open
``config.attributes["connection"]`` (``Store.upgrade`` does, so in-memory SQLite works too).

Concurrent upgrades (several workers starting at once) are serialised: on PostgreSQL by a
transaction-level advisory lock taken before Alembic reads the current revision, on SQLite by
``BEGIN IMMEDIATE`` (the database write lock) around the whole upgrade. Either way the whole
upgrade is one transaction, so a failed migration leaves the schema untouched.
"""

from __future__ import annotations

from contextlib import nullcontext
from logging.config import fileConfig

from sqlalchemy import Connection, text
from sqlalchemy.pool import NullPool

from alembic import context
from browserq.store.answering import patient
from browserq.store.engine import SQLITE_BEGIN_OPTION, create_store_engine, normalize_url
from browserq.store.migrations import MIGRATION_LOCK_KEY
from browserq.store.models import Base

config = context.config

if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def database_url() -> str:
    url = config.attributes.get("database_url") or context.get_x_argument(as_dictionary=True).get(
        "database_url"
    )
    if not url:
        from browserq.settings import get_settings

        url = get_settings().database_url
    return normalize_url(url).render_as_string(hide_password=False)


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_migrations_offline() -> None:
    url = database_url()
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=url.startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_on(connection: Connection) -> None:
    dialect = connection.dialect.name
    if dialect == "sqlite" and not connection.in_transaction():
        # The begin hook of browserq's SQLite engines then emits BEGIN IMMEDIATE.
        connection.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
    outer = nullcontext() if connection.in_transaction() else connection.begin()
    with outer, patient(connection.connection.dbapi_connection):
        if dialect == "postgresql":
            # A migration of a large database may take long: no statement limit meanwhile.
            connection.exec_driver_sql("SET LOCAL statement_timeout = 0")
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
            )
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run_on(connection)
        return
    engine = create_store_engine(database_url(), poolclass=NullPool)
    try:
        with engine.connect() as connection:
            _run_on(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
