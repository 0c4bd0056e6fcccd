"""A run's identity for one attempt, on a real store (SQLite file): leased, loaded, given back."""

from __future__ import annotations

from pathlib import Path

from browserq.execute import prepare_loaded, record_run
from browserq.execute.decide import ROTATION_MARK
from browserq.execute.identity_slots import IdentitySlots
from browserq.runner import RunRequest
from browserq.secrets import SecretBox
from browserq.store import Store
from tests.conftest import TEST_SECRET_KEY, make_settings, template

STEPS = "steps:\n  - {action: navigate, url: 'http://127.0.0.1:9/'}\n"


def test_a_named_identity_is_leased_with_its_storage_and_given_back(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = Store(settings.database_url)
    store.schema.upgrade()
    box = SecretBox(TEST_SECRET_KEY)
    slots = IdentitySlots(store, box, settings, owner="here:1:1")
    try:
        store.identities.upsert_identity(name="alice")
        grant = store.identity_leases.acquire_identity(run_id="0" * 32, owner="setup", ttl_s=30, name="alice")
        store.identity_leases.save_identity_storage("alice", token=grant.token,
                                    storage_encrypted=box.encrypt_json({"cookies": [{"name": "sid"}]}, why="test"))
        store.identity_leases.release_identity("alice", token=grant.token)
        prepared = prepare_loaded(template(STEPS), {})
        record_run(store, prepared, secret_box=None, identity="alice")
        run = store.runs.get_run(prepared.run_id)
        request = RunRequest(run_id=run.id, run_attempt=2, loaded=prepared.loaded, params={})
        leased = slots.lease(request, run)
        assert leased.identity.name == "alice" and leased.identity_storage == {"cookies": [{"name": "sid"}]}
        assert store.identities.get_identity("alice").lease_run_id == run.id
        assert slots.excluded(run, attempt=5) == []  # a named identity is never rotated away from
        slots.release(leased)
        assert store.identities.get_identity("alice").lease_run_id is None
    finally:
        store.dispose()


def test_a_pool_run_excludes_only_after_a_rotation(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = Store(settings.database_url)
    store.schema.upgrade()
    slots = IdentitySlots(store, SecretBox(TEST_SECRET_KEY), settings, owner="here:1:1")
    try:
        store.identities.upsert_identity(name="p-a", pool="p")
        prepared = prepare_loaded(template(STEPS), {})
        record_run(store, prepared, secret_box=None, identity_pool="p")
        store.leases.acquire_lease(prepared.run_id, owner="here:1:1", ttl_s=30)
        run = store.runs.get_run(prepared.run_id)
        assert slots.excluded(run, attempt=1) == []
        store.transitions.transition(run.id, "retrying", reason=f"BLOCKED: retry 1 of 2 in 1 s{ROTATION_MARK}p-a")
        assert slots.excluded(run, attempt=2) == ["p-a"]
    finally:
        store.dispose()
