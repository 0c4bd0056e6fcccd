"""The Store (browserq.store.store): one repository per concern over one Database, built from
settings, with the public surface other packages rely on."""

from __future__ import annotations

import inspect
import typing

import pytest

import browserq.store
from browserq.settings import Settings
from browserq.store import Store
from browserq.store.plumbing import Database
from browserq.store.store import moved_methods

#: What Store itself offers besides its repositories.
STORE = {"from_settings", "masked_url", "dialect", "engine", "dispose"}

#: Every public method and property of each repository: the packages above the store call these
#: (``store.<attribute>.<method>``). A new public name fails here until it is pinned.
REPOSITORIES = {
    "schema": {"upgrade", "current_revision"},
    "templates": {"save_template", "template_pin", "get_template_body"},
    "runs": {"create_run", "get_run", "find_run_by_idempotency_key", "heartbeat", "mark_enqueued", "delete_run",
             "list_runs", "run_ids_starting_with"},
    "retention": {"prunable_runs", "delete_finished_runs"},
    # apply: a status change inside another repository's transaction
    "transitions": {"transition", "transitions", "start_run", "finish_run", "apply"},
    "leases": {"acquire_lease", "renew_lease", "renew_leases", "release_lease", "save_checkpoint", "stuck_runs", "database_now"},
    "handoffs": {"begin_handoff", "end_handoff", "handoffs", "open_handoff", "mint_live_token", "redeem_live_token",
                 "begin_watch", "end_watch", "handovers", "mint_follow_token", "follow_handoff"},
    "reviews": {"resolve_review"},
    "webhooks": {"claim_webhook", "record_webhook_attempt", "mark_webhooks_sent", "overdue_webhooks",
                 "webhook_deliveries", "webhook_attempts", "redeliver_webhooks"},
    # cancel_in: a cancel inside the caller's transaction (a batch's rest)
    "cancellation": {"request_cancel", "cancel_in"},
    "batches": {"create_batch", "batch_summary", "trip_breaker", "cancel_batch_remaining", "finish_batch_if_done",
                "batch_runs"},
    # write_in: step records inside the caller's transaction (a run's end)
    "steps": {"start_step", "record_skipped_step", "finish_step", "mark_interrupted_steps", "steps", "add_artifact",
              "artifacts", "write_steps", "write_in"},
    "identities": {"upsert_identity", "get_identity", "list_identities", "delete_identity", "disable_identity",
                   "enable_identity"},
    "identity_leases": {"acquire_identity", "renew_identity", "release_identity", "save_identity_storage",
                        "set_identity_proxy"},
}  # fmt: skip

EXPORTS = [
    "LEGAL", "Artifact", "ArtifactDir", "ArtifactKind", "ArtifactPathDenied", "ArtifactView",
    "Base", "Batch", "BatchView", "DuplicateRun", "Identity", "IdentityBusy", "IdentityDisabled",
    "IdentityError", "IdentityLease", "IdentityLeaseLost", "IdentityNotFound", "IdentityView",
    "IllegalTransition", "Lease", "LeaseBusy", "LeaseLost", "NotInReview", "Run", "RunAlreadyFinished",
    "RunStatus", "RunTransition", "RunView", "StepAttemptRecord", "StepStatus", "StepView", "Store",
    "StoreUnavailable", "StoredFile", "TemplateRecord", "TransitionView", "artifact_store", "check_transition",
    "create_store_engine", "find_migrations_dir", "head_revision", "mask_url", "normalize_url",
]  # fmt: skip


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_the_public_surface_is_pinned() -> None:
    repositories = typing.get_type_hints(Store)
    assert _public(Store) == STORE
    assert {name: _public(cls) for name, cls in repositories.items()} == REPOSITORIES
    assert sorted(browserq.store.__all__) == sorted(EXPORTS)
    for name in EXPORTS:
        assert getattr(browserq.store, name) is not None


def test_the_store_holds_one_repository_per_concern_over_one_database() -> None:
    store = Store("sqlite://")
    try:
        held = {name: value for name, value in vars(store).items() if not name.startswith("_")}
        assert set(held) == {"database", *REPOSITORIES}
        assert isinstance(store.database, Database)
        for name, cls in typing.get_type_hints(Store).items():
            repository = held[name]
            assert type(repository) is cls, name
            # composed, never inherited: a repository's bases are object only
            assert cls.__bases__ == (object,), cls
            # every repository reaches the database it was handed (or through transitions)
            handed = [value for value in vars(repository).values() if value is store.database
                      or value is store.transitions]
            assert handed, name
            assert any(inspect.isfunction(value) for value in vars(cls).values()), cls
    finally:
        store.dispose()


def test_the_old_spelling_names_the_new_one() -> None:
    store = Store("sqlite://")
    try:
        with pytest.raises(AttributeError, match=r"^Store\.get_run moved: use store\.runs\.get_run$"):
            store.get_run("x")  # type: ignore[attr-defined]
        with pytest.raises(AttributeError, match=r"store\.identity_leases\.acquire_identity"):
            _ = store.acquire_identity  # type: ignore[attr-defined]
        with pytest.raises(TypeError, match=r"^Store\.steps\(\) moved: use store\.steps\.steps\(\)$"):
            store.steps("x")  # type: ignore[operator]
        for attribute in ("transitions", "handoffs"):  # repositories named like a method Store had
            with pytest.raises(TypeError, match=rf"store\.{attribute}\.{attribute}\(\)"):
                getattr(store, attribute)("x")
        # every method of every repository is in the map, under the attribute that holds it
        for attribute, names in REPOSITORIES.items():
            for name in names:
                assert moved_methods()[name] == attribute
                assert callable(getattr(getattr(store, attribute), name))
        with pytest.raises(AttributeError, match="has no attribute 'no_such_thing'"):
            _ = store.no_such_thing  # type: ignore[attr-defined]
    finally:
        store.dispose()


def test_the_renamed_row_model_names_its_new_name() -> None:
    with pytest.raises(AttributeError, match="StepAttemptRecord"):
        _ = browserq.store.StepAttempt  # type: ignore[attr-defined]


def test_from_settings(store_url: str) -> None:
    store = Store.from_settings(Settings(database_url=store_url))
    try:
        assert isinstance(store, Store) and store.runs.list_runs() == []
        assert repr(store) == f"Store({store.masked_url!r})"
    finally:
        store.dispose()


def test_a_short_id_finds_runs_by_prefix_and_a_word_finds_none(store_url: str) -> None:
    from tests.store.helpers import new_run

    store = Store(store_url)
    try:
        run_id = new_run(store, run_id="e" + "0" * 31)
        dashed = f"{run_id[:8]}-{run_id[8:12]}"
        assert store.runs.run_ids_starting_with("E000") == [run_id]
        assert store.runs.run_ids_starting_with(dashed) == [run_id]
        # "nope" holds one hex letter ("e"): it used to match every run starting with "e"
        assert store.runs.run_ids_starting_with("nope") == []
        assert store.runs.run_ids_starting_with("e0z") == []
    finally:
        store.dispose()
