"""The identity catalogue (browserq.store.identities) and migration 0003; leases are
test_identity_leases.py's."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import MetaData, inspect

from alembic import command
from browserq.errors import StoreError
from browserq.store import (
    Base,
    IdentityBusy,
    IdentityDisabled,
    IdentityLeaseLost,
    IdentityNotFound,
    Store,
)
from browserq.store.migrations import alembic_config


def test_errors_are_store_errors() -> None:
    for cls in (IdentityBusy, IdentityDisabled, IdentityLeaseLost, IdentityNotFound):
        assert issubclass(cls, StoreError)
    assert not issubclass(IdentityDisabled, IdentityBusy)  # waiting does not help


def test_upsert_creates_then_updates_only_the_given_fields(store: Store) -> None:
    created = store.identities.upsert_identity(name="ann", pool="p", proxy_id="px1", locale="de-DE")
    assert re.fullmatch(r"[0-9a-f]{32}", created.fingerprint_seed)
    assert (created.pool, created.proxy_id, created.locale, created.timezone) == (
        "p",
        "px1",
        "de-DE",
        None,
    )
    assert (created.lease_token, created.uses, created.storage_encrypted) == (0, 0, None)
    assert created.created_at.tzinfo is not None and not created.disabled

    updated = store.identities.upsert_identity(name="ann", timezone="Europe/Berlin", region="eu")
    assert updated.fingerprint_seed == created.fingerprint_seed  # kept
    assert (updated.pool, updated.proxy_id, updated.locale) == ("p", "px1", "de-DE")
    assert (updated.timezone, updated.region) == ("Europe/Berlin", "eu")
    assert store.identities.upsert_identity(name="ann", fingerprint_seed="s1").fingerprint_seed == "s1"
    assert store.identities.upsert_identity(name="bob", fingerprint_seed="s2").fingerprint_seed == "s2"
    assert store.identities.get_identity("ann") == store.identities.upsert_identity(name="ann")
    with pytest.raises(ValueError, match="longer than 100"):
        store.identities.upsert_identity(name="x" * 101)


def test_get_list_delete(store: Store) -> None:
    for name, pool in (("c", "p1"), ("a", "p1"), ("b", "p2"), ("d", None)):
        store.identities.upsert_identity(name=name, pool=pool)
    assert [i.name for i in store.identities.list_identities()] == ["a", "b", "c", "d"]
    assert [i.name for i in store.identities.list_identities(pool="p1")] == ["a", "c"]
    assert store.identities.list_identities(pool="nope") == []
    store.identities.delete_identity("a")
    store.identities.delete_identity("a")  # absent: a no-op
    assert store.identities.get_identity("a") is None
    assert [i.name for i in store.identities.list_identities(pool="p1")] == ["c"]


def test_migration_0003_adds_identities_and_the_runs_identity_columns(empty_url: str) -> None:
    store = Store(empty_url)

    def migrate(how: Callable[..., None], revision: str) -> None:
        with store.engine.connect() as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            how(config, revision)
            conn.commit()

    def diff(metadata: MetaData) -> list:
        with store.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return compare_metadata(context, metadata)

    def schema(*, identities: bool) -> MetaData:
        """The models as of 0003 (with identities) or 0002 (without): later revisions removed."""
        metadata = MetaData(naming_convention=Base.metadata.naming_convention)
        later_columns = {"runs": {"template_hash", "warnings", "human_wait_s", "notify_url"},
                         "step_attempts": {"warnings", "events"}}  # 0004-7
        if not identities:  # 0003 also adds the runs' identity request columns
            later_columns["runs"] |= {"identity", "identity_pool"}
        for table in Base.metadata.tables.values():
            later_tables = ("template_versions", "handoffs", "live_tokens", "webhook_deliveries", "webhook_attempts")
            if table.name in later_tables or (table.name == "identities" and not identities):
                continue
            copy = table.to_metadata(metadata)
            for column in later_columns.get(table.name, ()):
                copy._columns.remove(copy.c[column])
            for index in [ix for ix in copy.indexes if ix.name in LATER_INDEXES]:
                copy.indexes.discard(index)
        return metadata

    LATER_INDEXES = {"ix_runs_status_finished_at"}  # 0008 (live_tokens' index: a later table)
    without = schema(identities=False)
    try:
        migrate(command.upgrade, "0002")
        assert diff(without) == []
        migrate(command.upgrade, "0003")
        assert diff(schema(identities=True)) == []
        indexes = {ix["name"] for ix in inspect(store.engine).get_indexes("identities")}
        assert indexes == {"ix_identities_pool_lease_expires_at"}
        store.identities.upsert_identity(name="ann", pool="p")
        assert store.identity_leases.acquire_identity(run_id="r1", owner="w", ttl_s=60, pool="p").name == "ann"
        migrate(command.downgrade, "0002")
        assert "identities" not in inspect(store.engine).get_table_names()
        run_columns = {c["name"] for c in inspect(store.engine).get_columns("runs")}
        assert not {"identity", "identity_pool"} & run_columns
        assert diff(without) == []
    finally:
        store.dispose()
