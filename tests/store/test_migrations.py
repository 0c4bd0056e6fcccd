"""The Alembic migrations build exactly the models' schema, on SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Column, Index, MetaData, String, inspect

from alembic import command
from browserq.errors import StoreError
from browserq.settings import reset_settings_cache
from browserq.store import Base, Store, find_migrations_dir, head_revision
from browserq.store import migrations as migrations_module
from browserq.store.migrations import alembic_config

REPO = Path(__file__).resolve().parents[2]
TABLES = {"templates", "runs", "step_attempts", "artifacts"}
INDEXES = {
    "runs": {
        "ix_runs_status_created_at",
        "ix_runs_template_name_template_version",
        "ix_runs_created_at",
    },
    "step_attempts": {"ix_step_attempts_run_id_id", "ix_step_attempts_error_code"},
    "artifacts": {"ix_artifacts_run_id", "ix_artifacts_step_attempt_id"},
}


def _diff(store: Store, metadata: MetaData) -> list:
    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(context, metadata)


def test_head_is_the_initial_migration() -> None:
    assert head_revision() == "0001"
    assert find_migrations_dir() == REPO / "alembic"


def test_upgrade_from_empty_to_head(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        assert store.current_revision() is None
        store.upgrade()
        assert store.current_revision() == head_revision()
        assert TABLES <= set(inspect(store.engine).get_table_names())
    finally:
        store.dispose()


def test_migrated_schema_matches_models(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        store.upgrade()
        assert _diff(store, Base.metadata) == []

        # The comparison is not vacuous: a model change the migration lacks is reported.
        changed = MetaData(naming_convention=Base.metadata.naming_convention)
        for table in Base.metadata.tables.values():
            table.to_metadata(changed)
        changed.tables["runs"].append_column(Column("extra", String(10)))
        Index("ix_runs_tenant", changed.tables["runs"].c.tenant)
        kinds = {d[0] if isinstance(d, tuple) else d[0][0] for d in _diff(store, changed)}
        assert {"add_column", "add_index"} <= kinds
    finally:
        store.dispose()


def test_constraint_and_index_names_are_explicit(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        store.upgrade()
        inspector = inspect(store.engine)
        for table, expected in INDEXES.items():
            indexes = {ix["name"]: ix for ix in inspector.get_indexes(table)}
            assert expected <= set(indexes), table
        partial = {ix["name"]: ix for ix in inspector.get_indexes("step_attempts")}[
            "ix_step_attempts_error_code"
        ]
        where = partial["dialect_options"][f"{store.dialect}_where"]
        assert "failed" in str(where)
        fks = {fk["name"] for fk in inspector.get_foreign_keys("artifacts")}
        if store.dialect == "postgresql":  # SQLite does not reflect constraint names reliably
            assert fks == {"fk_artifacts_run_id_runs", "fk_artifacts_step_attempt_id_step_attempts"}
            uniques = {u["name"] for u in inspector.get_unique_constraints("templates")}
            assert uniques == {"uq_templates_name_version_content_hash"}
            assert inspector.get_pk_constraint("runs")["name"] == "pk_runs"
    finally:
        store.dispose()


def test_upgrade_twice_is_a_no_op(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        store.upgrade()
        tid = store.save_template(
            name="t", version="1", content_hash="0" * 64, body="steps: []", source="t.yaml"
        )
        store.upgrade()
        assert store.current_revision() == head_revision()
        assert store.get_template_body(tid).body == "steps: []"
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
            store.upgrade()
        except BaseException as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=upgrade, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert errors == []
        assert stores[0].current_revision() == head_revision()
        assert _diff(stores[0], Base.metadata) == []
    finally:
        for s in stores:
            s.dispose()


def test_downgrade_to_base_and_back(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        store.upgrade()
        with store.engine.connect() as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            command.downgrade(config, "base")
            conn.commit()
        assert not TABLES & set(inspect(store.engine).get_table_names())
        store.upgrade()
        assert store.current_revision() == head_revision()
    finally:
        store.dispose()


def test_alembic_ini_takes_the_url_from_settings(
    empty_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BROWSERQ_DATABASE_URL", empty_url)
    reset_settings_cache()
    try:
        config = Config(str(REPO / "alembic.ini"))
        config.attributes["configure_logger"] = False
        command.upgrade(config, "head")
    finally:
        reset_settings_cache()
    store = Store(empty_url)
    try:
        assert store.current_revision() == head_revision()
    finally:
        store.dispose()


def test_in_memory_sqlite_can_be_upgraded() -> None:
    store = Store("sqlite://")
    try:
        store.upgrade()
        assert store.current_revision() == head_revision()
        assert (
            store.save_template(name="t", version="1", content_hash="1" * 64, body="b", source="s")
            == 1
        )
    finally:
        store.dispose()


def test_missing_migrations_is_a_clear_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migrations_module, "MIGRATION_DIR_CANDIDATES", (tmp_path / "nope",))
    store = Store(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        with pytest.raises(StoreError, match="cannot find browserq's database migrations"):
            store.upgrade()
    finally:
        store.dispose()


def test_concurrent_upgrades_from_several_processes(new_empty_url: Callable[[], str]) -> None:
    url = new_empty_url()
    script = (
        "import sys, time\n"
        "from browserq.store import Store\n"
        "start = float(sys.argv[2])\n"
        "time.sleep(max(0.0, start - time.time()))\n"
        "s = Store(sys.argv[1]); s.upgrade(); print(s.current_revision())\n"
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
        assert _diff(store, Base.metadata) == []
    finally:
        store.dispose()
