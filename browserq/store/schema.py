"""The database schema's version: migrate to the newest (Alembic), and read where it is.

Alembic is imported inside the methods (see :mod:`browserq.store.migrations`): a store that only
reads and writes runs never loads it.
"""

from __future__ import annotations

import threading

from sqlalchemy import text

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
        migration files declare is left alone without loading Alembic.
        """
        head = declared_head()
        if head is not None and self._stamped(head):
            return
        load_alembic()
        from alembic import command

        config = alembic_config(self.db.url.render_as_string(hide_password=False))

        def attempt(_retried: bool) -> None:
            with _UPGRADE_LOCK, self.db.engine.connect() as connection:
                connection.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
                config.attributes["connection"] = connection
                command.upgrade(config, "head")

        self.db.retry("upgrading the database schema", attempt)

    def _stamped(self, head: str) -> bool:
        """Whether the database's ``alembic_version`` is ``head`` (False on any doubt: no table
        yet, an unreachable server — the upgrade then says what is wrong, with its retries)."""
        try:
            with self.db.engine.connect() as connection:
                rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
        except Exception:
            return False
        return [row[0] for row in rows] == [head]

    def current_revision(self) -> str | None:
        """The schema revision the database is at; None before the first upgrade."""
        load_alembic()
        from alembic.runtime.migration import MigrationContext

        def attempt(_retried: bool) -> str | None:
            with self.db.engine.connect() as connection:
                return MigrationContext.configure(connection).get_current_revision()

        return self.db.retry("reading the schema revision", attempt)


__all__ = ["Schema"]
