"""Locating and running the Alembic migrations (``alembic/`` in a checkout, ``_migrations`` in a wheel).

Alembic is imported by the functions that use it, not with this module: the store (and every
``browserq`` command that only reads it) loads without it; only migrating or reading the
newest revision pays for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from browserq.errors import StoreError

if TYPE_CHECKING:
    from alembic.config import Config

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # .../browserq
#: Where the migrations may live: installed from a wheel, then a source checkout (editable install).
MIGRATION_DIR_CANDIDATES: tuple[Path, ...] = (
    _PACKAGE_DIR / "_migrations",
    _PACKAGE_DIR.parent / "alembic",
)
#: Key of the PostgreSQL transaction-level advisory lock held while migrating ("brwq").
MIGRATION_LOCK_KEY = 0x62727771


def find_migrations_dir() -> Path:
    for candidate in MIGRATION_DIR_CANDIDATES:
        if (candidate / "env.py").is_file() and (candidate / "versions").is_dir():
            return candidate
    tried = ", ".join(str(c) for c in MIGRATION_DIR_CANDIDATES)
    raise StoreError(
        f"cannot find browserq's database migrations (tried {tried}); reinstall browserq "
        "or run from a source checkout that has the alembic/ directory"
    )


def alembic_config(database_url: str | None = None) -> Config:
    """An Alembic config that needs no alembic.ini: script location found, URL passed in attributes."""
    from alembic.config import Config

    config = Config()
    location = str(find_migrations_dir())
    config.set_main_option("script_location", location.replace("%", "%%"))
    config.set_main_option("path_separator", "os")
    if database_url is not None:
        config.attributes["database_url"] = database_url
    return config


def head_revision() -> str | None:
    """The newest migration's revision id."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()
