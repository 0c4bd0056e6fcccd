"""Locating and running the Alembic migrations (``alembic/`` in a checkout, ``_migrations`` in a wheel).

Alembic is imported by the functions that use it, not with this module: the store (and every
``browserq`` command that only reads it) loads without it; only migrating or reading the
newest revision pays for it.
"""

from __future__ import annotations

import functools
import importlib
import logging
import re
import sys
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


def load_alembic() -> None:
    """Import Alembic (once) without the INFO lines it logs while loading ("setup plugin …"): it
    used to load with the store, before a process configured its logging, so they were never
    shown — a command run with ``BROWSERQ_LOG_LEVEL=INFO`` still does not show them."""
    if "alembic" in sys.modules:
        return
    plugins = logging.getLogger("alembic.runtime.plugins")
    disabled, plugins.disabled = plugins.disabled, True
    try:
        importlib.import_module("alembic")  # its config, script, runtime and autogenerate parts
    finally:
        plugins.disabled = disabled


def find_migrations_dir() -> Path:
    for candidate in MIGRATION_DIR_CANDIDATES:
        if (candidate / "env.py").is_file() and (candidate / "versions").is_dir():
            return candidate
    tried = ", ".join(str(c) for c in MIGRATION_DIR_CANDIDATES)
    raise StoreError(
        f"cannot find browserq's database migrations (tried {tried}); reinstall browserq "
        "or run from a source checkout that has the alembic/ directory"
    )


#: ``revision = "…"`` and ``down_revision = "…"`` (or None) in a migration file, annotated or not.
_REVISION = re.compile(r'^revision(?:\s*:[^=\n]*)?\s*=\s*["\']([^"\']+)["\']\s*$', re.MULTILINE)
_DOWN_REVISION = re.compile(
    r'^down_revision(?:\s*:[^=\n]*)?\s*=\s*(?:None|["\']([^"\']+)["\'])\s*$', re.MULTILINE
)


@functools.lru_cache(maxsize=1)
def declared_head() -> str | None:
    """The newest revision as the migration files declare it, read without importing Alembic.

    For :meth:`~browserq.store.schema.Schema.upgrade`'s fast path: a database already there needs
    no Alembic at all (importing it and asking it costs ~0.2 CPU-s per process that opens the
    store — every worker process, every ``browserq runs``). None when the files are not plain
    enough to be sure (a file without exactly one revision and one single down-revision, a
    merge, two heads): the caller then asks Alembic.
    """
    try:
        files = sorted((find_migrations_dir() / "versions").glob("*.py"))
        revisions, parents = set(), set()
        for path in files:
            text = path.read_text(encoding="utf-8")
            found, down = _REVISION.findall(text), _DOWN_REVISION.findall(text)
            if len(found) != 1 or len(down) != 1:
                return None
            revisions.add(found[0])
            if down[0]:
                parents.add(down[0])
    except (OSError, UnicodeDecodeError, StoreError):
        return None
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 and parents <= revisions else None


def alembic_config(database_url: str | None = None) -> Config:
    """An Alembic config that needs no alembic.ini: script location found, URL passed in attributes."""
    load_alembic()
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
    load_alembic()
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()
