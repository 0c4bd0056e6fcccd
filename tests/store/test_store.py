"""The Store facade (browserq.store.store): one object composing every repository, built from
settings, with the public surface other packages rely on."""

from __future__ import annotations

import inspect

import browserq.store
from browserq.settings import Settings
from browserq.store import Store
from browserq.store.plumbing import StoreBase

#: Every public method and property of Store: the packages above the store call these.
PUBLIC = {
    # plumbing and schema
    "from_settings", "masked_url", "dialect", "dispose", "upgrade", "current_revision",
    # templates
    "save_template", "template_pin", "get_template_body",
    # runs
    "create_run", "get_run", "find_run_by_idempotency_key", "heartbeat", "mark_enqueued",
    "delete_run", "list_runs", "run_ids_starting_with",
    # retention
    "prunable_runs", "delete_finished_runs",
    # transitions
    "transition", "transitions", "start_run", "finish_run",
    # leases and sweeping
    "acquire_lease", "renew_lease", "release_lease", "save_checkpoint", "stuck_runs", "database_now",
    # waits for a person and their live-view tokens
    "begin_handoff", "end_handoff", "handoffs", "open_handoff", "mint_live_token", "redeem_live_token",
    "begin_watch", "end_watch", "handovers", "resolve_review", "mint_follow_token", "follow_handoff",
    # the webhook outbox
    "claim_webhook", "record_webhook_attempt", "mark_webhooks_sent", "overdue_webhooks", "webhook_deliveries",
    "webhook_attempts", "redeliver_webhooks",
    # cancellation and batches
    "request_cancel", "create_batch", "batch_summary", "trip_breaker", "cancel_batch_remaining",
    "finish_batch_if_done", "batch_runs",
    # steps and artifacts
    "start_step", "record_skipped_step", "finish_step", "mark_interrupted_steps", "steps",
    "add_artifact", "artifacts", "write_steps",
    # identities
    "upsert_identity", "get_identity", "list_identities", "delete_identity", "disable_identity",
    "enable_identity", "acquire_identity", "renew_identity", "release_identity",
    "save_identity_storage", "set_identity_proxy",
}  # fmt: skip

EXPORTS = [
    "LEGAL", "Artifact", "ArtifactDir", "ArtifactKind", "ArtifactPathDenied", "ArtifactView",
    "Base", "Batch", "BatchView", "DuplicateRun", "Identity", "IdentityBusy", "IdentityDisabled",
    "IdentityError", "IdentityLease", "IdentityLeaseLost", "IdentityNotFound", "IdentityView",
    "IllegalTransition", "Lease", "LeaseBusy", "LeaseLost", "NotInReview", "Run", "RunAlreadyFinished",
    "RunStatus", "RunTransition", "RunView", "StepAttempt", "StepStatus", "StepView", "Store",
    "StoreUnavailable", "StoredFile", "TemplateRecord", "TransitionView", "artifact_store", "check_transition",
    "create_store_engine", "find_migrations_dir", "head_revision", "mask_url", "normalize_url",
]  # fmt: skip


def test_the_public_surface_is_pinned() -> None:
    public = {name for name in dir(Store) if not name.startswith("_")}
    assert public == PUBLIC
    assert sorted(browserq.store.__all__) == sorted(EXPORTS)
    for name in EXPORTS:
        assert getattr(browserq.store, name) is not None


def test_every_repository_shares_one_plumbing() -> None:
    repositories = [cls for cls in Store.__mro__[1:] if cls not in (StoreBase, object)]
    assert repositories and all(issubclass(cls, StoreBase) for cls in repositories)
    for cls in repositories:  # each repository adds its own methods; nothing is delegated
        assert any(
            inspect.isfunction(value)
            for name, value in vars(cls).items()
            if not name.startswith("__")
        ), cls
    assert "__init__" not in vars(Store)


def test_from_settings(store_url: str) -> None:
    store = Store.from_settings(Settings(database_url=store_url))
    try:
        assert isinstance(store, Store) and store.list_runs() == []
        assert repr(store) == f"Store({store.masked_url!r})"
    finally:
        store.dispose()


def test_a_short_id_finds_runs_by_prefix_and_a_word_finds_none(store_url: str) -> None:
    from tests.store.helpers import new_run

    store = Store(store_url)
    try:
        run_id = new_run(store, run_id="e" + "0" * 31)
        dashed = f"{run_id[:8]}-{run_id[8:12]}"
        assert store.run_ids_starting_with("E000") == [run_id]
        assert store.run_ids_starting_with(dashed) == [run_id]
        # "nope" holds one hex letter ("e"): it used to match every run starting with "e"
        assert store.run_ids_starting_with("nope") == []
        assert store.run_ids_starting_with("e0z") == []
    finally:
        store.dispose()
