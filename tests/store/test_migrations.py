"""The Alembic migrations (browserq.store.migrations, alembic/) build exactly the models' schema,
on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from alembic.config import Config
from sqlalchemy import Column, Index, MetaData, String, inspect

from alembic import command
from browserq.errors import StoreError
from browserq.settings import reset_settings_cache
from browserq.store import Base, Store, find_migrations_dir, head_revision
from browserq.store import migrations as migrations_module
from browserq.store.migrations import alembic_config
from tests.store.helpers import schema_diff

REPO = Path(__file__).resolve().parents[2]
TABLES = {
    "templates",
    "runs",
    "step_attempts",
    "artifacts",
    "run_transitions",
    "batches",
    "identities",
    "template_versions",
}
INDEXES = {
    "runs": {
        "ix_runs_status_created_at",
        "ix_runs_template_name_template_version",
        "ix_runs_created_at",
        "ix_runs_status_lease_expires_at",
        "ix_runs_batch_id",
        "ix_runs_status_finished_at",
    },
    "run_transitions": {"ix_run_transitions_run_id_id"},
    "step_attempts": {"ix_step_attempts_run_id_id", "ix_step_attempts_error_code"},
    "artifacts": {"ix_artifacts_run_id", "ix_artifacts_step_attempt_id"},
    "identities": {"ix_identities_pool_lease_expires_at"},
    "handoffs": {"ix_handoffs_run_id_id"},
    "live_tokens": {"ix_live_tokens_handoff_id", "ix_live_tokens_run_id"},
    "webhook_deliveries": {
        "ix_webhook_deliveries_run_id",
        "ix_webhook_deliveries_status_next_attempt_at",
    },
    "webhook_attempts": {"ix_webhook_attempts_delivery_id"},
}


def test_head_is_the_human_loop_migration() -> None:
    assert head_revision() == "0008_retention"
    assert find_migrations_dir() == REPO / "alembic"


def test_migrated_schema_matches_models(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        store.schema.upgrade()
        assert schema_diff(store, Base.metadata) == []

        # The comparison is not vacuous: a model change the migration lacks is reported.
        changed = MetaData(naming_convention=Base.metadata.naming_convention)
        for table in Base.metadata.tables.values():
            table.to_metadata(changed)
        changed.tables["runs"].append_column(Column("extra", String(10)))
        Index("ix_runs_tenant", changed.tables["runs"].c.tenant)
        kinds = {d[0] if isinstance(d, tuple) else d[0][0] for d in schema_diff(store, changed)}
        assert {"add_column", "add_index"} <= kinds
    finally:
        store.dispose()


def test_constraint_and_index_names_are_explicit(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        store.schema.upgrade()
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


def test_downgrade_to_base_and_back(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        store.schema.upgrade()
        with store.engine.connect() as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            command.downgrade(config, "base")
            conn.commit()
        assert not TABLES & set(inspect(store.engine).get_table_names())
        store.schema.upgrade()
        assert store.schema.current_revision() == head_revision()
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
        assert store.schema.current_revision() == head_revision()
    finally:
        store.dispose()


def test_missing_migrations_is_a_clear_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migrations_module, "MIGRATION_DIR_CANDIDATES", (tmp_path / "nope",))
    store = Store(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        with pytest.raises(StoreError, match="cannot find browserq's database migrations"):
            store.schema.upgrade()
    finally:
        store.dispose()


def _migrate(store: Store, how: Callable[[Config, str], None], revision: str) -> None:
    with store.engine.connect() as conn:
        config = alembic_config()
        config.attributes["connection"] = conn
        how(config, revision)
        conn.commit()


def _rows(store: Store, table: str) -> list[dict]:
    from sqlalchemy import text

    with store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(f"SELECT * FROM {table} ORDER BY id"))]


def test_0001_to_0002_keeps_existing_rows(empty_url: str) -> None:
    from sqlalchemy import text

    store = Store(empty_url)
    try:
        _migrate(store, command.upgrade, "0001")
        assert store.schema.current_revision() == "0001"
        with store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO templates (name, version, content_hash, body, source, created_at) "
                    "VALUES ('t', '1', :h, 'steps: []', 't.yaml', :now)"
                ),
                {"h": "0" * 64, "now": "2026-11-30 10:00:00+00"},
            )
            for run_id, status in (("r1", "completed"), ("r2", "running"), ("r3", "queued")):
                conn.execute(
                    text(
                        "INSERT INTO runs (id, template_id, template_name, template_version, params, "
                        "status, attempt, worker, timeout_s, queued_at, started_at, created_at) "
                        "VALUES (:id, 1, 't', '1', '{}', :status, 1, 'old-w', 30, :now, :now, :now)"
                    ),
                    {"id": run_id, "status": status, "now": "2026-11-30 10:00:00+00"},
                )
            conn.execute(
                text(
                    "INSERT INTO step_attempts (run_id, run_attempt, step_path, attempt, action, inputs, "
                    "status, started_at) VALUES ('r2', 1, '0', 1, 'click', '{}', 'started', :now)"
                ),
                {"now": "2026-11-30 10:00:00+00"},
            )
            conn.execute(
                text(
                    "INSERT INTO artifacts (run_id, step_attempt_id, kind, path, content_type, size, "
                    "sha256, created_at) VALUES ('r2', 1, 'dom', 'r2/dom.html', 'text/html', 3, :h, :now)"
                ),
                {"h": "1" * 64, "now": "2026-11-30 10:00:00+00"},
            )
        before = {t: _rows(store, t) for t in ("templates", "step_attempts", "artifacts")}

        store.schema.upgrade()  # through 0002 (and the later, additive revisions)
        assert store.schema.current_revision() == head_revision()
        assert schema_diff(store, Base.metadata) == []  # an upgraded database equals a fresh one
        for table, rows in before.items():
            after = _rows(store, table)  # later revisions may add (empty) columns
            assert [{k: row[k] for k in rows[0]} for row in after] == rows, table
            assert all(row.get("warnings") is None for row in after), table
        runs = {r.id: r for r in store.runs.list_runs()}
        assert {k: v.status for k, v in runs.items()} == {
            "r1": "completed",
            "r2": "running",
            "r3": "queued",
        }
        for run in runs.values():
            assert (run.lease_token, run.takeovers, run.lease_owner, run.batch_id) == (
                0,
                0,
                None,
                None,
            )
            assert run.cancel_requested_at is None and run.status_reason is None

        # The old rows work with the new API.
        lease = store.leases.acquire_lease("r2", owner="new-w", ttl_s=30)
        assert lease.takeover and lease.token == 1 and lease.attempt == 2
        assert [s.id for s in store.steps.mark_interrupted_steps("r2", before_attempt=2)] == [1]
        store.transitions.finish_run("r2", status="completed", outputs={}, token=lease.token)
        assert store.cancellation.request_cancel("r3", reason="x").status == "cancelled"
        assert [t.to_status for t in store.transitions.transitions("r2")] == ["running", "completed"]
        store.batches.create_batch(
            batch_id="b", template_name="t", template_version="1", total=1, breaker=None
        )

        # And back down: 0001's tables and rows are still there (SQLite rebuilds `runs`).
        _migrate(store, command.downgrade, "0001")
        assert store.schema.current_revision() == "0001"
        names = set(inspect(store.engine).get_table_names())
        assert {"templates", "runs", "step_attempts", "artifacts"} <= names
        assert not {"run_transitions", "batches", "identities"} & names
        assert [r["id"] for r in _rows(store, "runs")] == ["r1", "r2", "r3"]
        assert len(_rows(store, "step_attempts")) == 1 and len(_rows(store, "artifacts")) == 1
        assert _rows(store, "artifacts")[0]["step_attempt_id"] == 1
        store.schema.upgrade()
        assert schema_diff(store, Base.metadata) == []
    finally:
        store.dispose()
