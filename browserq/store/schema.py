"""The database schema's version: migrate to the newest (Alembic), and read where it is.

Alembic is imported inside the methods (see :mod:`browserq.store.migrations`): a store that only
reads and writes runs never loads it.
"""

from __future__ import annotations

import threading

from sqlalchemy import Connection, inspect, text

from browserq.store.engine import SQLITE_BEGIN_OPTION
from browserq.store.migrations import alembic_config, declared_head, load_alembic
from browserq.store.plumbing import Database

#: Alembic's ``context`` is process-global: upgrades from several threads take turns.
_UPGRADE_LOCK = threading.Lock()


class Schema:
    """The database schema's version (``store.schema``)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def upgrade(self) -> None:
        """Migrate the database to the newest schema (a no-op when it is already there).

        Safe when several processes start at once: PostgreSQL takes an advisory lock, SQLite the
        write lock, for the whole upgrade (see alembic/env.py). A database already at the head the
        migration files declare is left alone without loading Alembic, seen on the upgrade's own
        connection (a database that cannot be reached is tried as often as before, not once more).
        """
        head = declared_head()
        url = self.db.url.render_as_string(hide_password=False)

        def attempt(_retried: bool) -> None:
            with _UPGRADE_LOCK, self.db.engine.connect() as connection:
                at_head = _stamped(connection, head)
                connection.rollback()  # the check's own transaction: the upgrade begins its own
                if at_head:
                    return
                load_alembic()
                from alembic import command

                config = alembic_config(url)
                connection.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
                config.attributes["connection"] = connection
                command.upgrade(config, "head")

        self.db.retry("upgrading the database schema", attempt)

    def current_revision(self) -> str | None:
        """The schema revision the database is at; None before the first upgrade."""
        load_alembic()
        from alembic.runtime.migration import MigrationContext

        def attempt(_retried: bool) -> str | None:
            with self.db.engine.connect() as connection:
                return MigrationContext.configure(connection).get_current_revision()

        return self.db.retry("reading the schema revision", attempt)


def _stamped(connection: Connection, head: str | None) -> bool:
    """Whether the database's ``alembic_version`` holds exactly ``head`` (None: not known)."""
    if head is None or not inspect(connection).has_table("alembic_version"):
        return False
    rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    return [row[0] for row in rows] == [head]


__all__ = ["Schema"]
