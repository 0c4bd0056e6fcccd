"""Migrating a database (browserq.store.schema): from empty to head, idempotent, and safe when
several threads or processes upgrade at once, on SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import inspect

from browserq.store import Base, Store, head_revision
from tests.store.conftest import TABLES
from tests.store.helpers import schema_diff

REPO = Path(__file__).resolve().parents[2]


def test_upgrade_from_empty_to_head(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        assert store.schema.current_revision() is None
        store.schema.upgrade()
        assert store.schema.current_revision() == head_revision()
        assert set(inspect(store.engine).get_table_names()) >= set(TABLES)
    finally:
        store.dispose()


def test_upgrade_twice_is_a_no_op(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        store.schema.upgrade()
        tid = store.templates.save_template(
            name="t", version="1", content_hash="0" * 64, body="steps: []", source="t.yaml"
        )
        store.schema.upgrade()
        assert store.schema.current_revision() == head_revision()
        assert store.templates.get_template_body(tid).body == "steps: []"
    finally:
        store.dispose()


def test_a_database_behind_the_newest_migration_is_still_upgraded(empty_url: str) -> None:
    """The fast path (no Alembic when the database is at the declared head) never skips a
    migration: a database one revision behind goes through Alembic to the head."""
    from alembic import command
    from browserq.store.migrations import alembic_config, declared_head

    assert declared_head() == head_revision()  # the files are read as Alembic reads them
    store = Store(empty_url)
    try:
        store.schema.upgrade()
        config = alembic_config(empty_url)
        command.downgrade(config, "-1")
        behind = store.schema.current_revision()
        assert behind is not None and behind != head_revision()
        store.schema.upgrade()
        assert store.schema.current_revision() == head_revision()
        assert set(inspect(store.engine).get_table_names()) >= set(TABLES)
    finally:
        store.dispose()


def test_concurrent_upgrades_do_not_race(new_empty_url: Callable[[], str]) -> None:
    url = new_empty_url()
    stores = [Store(url) for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def upgrade(store: Store) -> None:
        barrier.wait()
        try:
            store.schema.upgrade()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=upgrade, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert errors == []
        assert stores[0].schema.current_revision() == head_revision()
        assert schema_diff(stores[0], Base.metadata) == []
    finally:
        for s in stores:
            s.dispose()


def test_in_memory_sqlite_can_be_upgraded() -> None:
    store = Store("sqlite://")
    try:
        store.schema.upgrade()
        assert store.schema.current_revision() == head_revision()
        assert (
            store.templates.save_template(name="t", version="1", content_hash="1" * 64, body="b", source="s")
            == 1
        )
    finally:
        store.dispose()


def test_concurrent_upgrades_from_several_processes(new_empty_url: Callable[[], str]) -> None:
    url = new_empty_url()
    script = (
        "import sys, time\n"
        "from browserq.store import Store\n"
        "start = float(sys.argv[2])\n"
        "time.sleep(max(0.0, start - time.time()))\n"
        "s = Store(sys.argv[1]); s.schema.upgrade(); print(s.schema.current_revision())\n"
    )
    start = time.time() + 1.5
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, url, str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for _ in range(3)
    ]
    results = [p.communicate(timeout=60) for p in procs]
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == head_revision()
    store = Store(url)
    try:
        assert schema_diff(store, Base.metadata) == []
    finally:
        store.dispose()
