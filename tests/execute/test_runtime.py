"""The run path inside one process (Runtime.execute → runner), on real PostgreSQL, Redis and
Chromium: decisions by policy, identity rotation through a real pool, reads of the run per attempt."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from browserq.errors import ErrorClass
from browserq.execute import RetryLater, Runtime, prepare_loaded, record_run
from browserq.execute.decide import ROTATION_MARK
from browserq.execute.identity_slots import IdentitySlots
from browserq.limits import TenantLimiter
from browserq.store import IdentityBusy, IdentityLease, Store
from browserq.store.identity_leases import IdentityLeases
from browserq.store.plumbing import Database
from tests.conftest import template

BLOCKED_PAGE = """
params:
  base_url: {type: url, required: true}
settings: {trace: off, step_timeout_s: 10, run_retries: 1}
steps:
  - {action: navigate, url: "${base_url}/status/403"}
"""
QUICK = """
params:
  base_url: {type: url, required: true}
settings: {trace: off, step_timeout_s: 10}
steps:
  - {action: navigate, url: "${base_url}/quotes/"}
  - {action: get, what: title, into: title}
"""


class RecordingIdentityLeases(IdentityLeases):
    """The real identity leases, noting what each acquisition was asked to exclude (and excluding
    it itself when the store underneath cannot yet)."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.excludes: list[tuple[str, ...]] = []
        self.raise_instead: BaseException | None = None

    def acquire_identity(self, *, exclude: tuple[str, ...] | list[str] = (), **kwargs: Any) -> IdentityLease:  # type: ignore[override]
        self.excludes.append(tuple(exclude))
        if self.raise_instead is not None:
            raise self.raise_instead
        if "exclude" in IdentityLeases.acquire_identity.__code__.co_varnames:  # the store branch landed
            return super().acquire_identity(exclude=exclude, **kwargs)  # type: ignore[call-arg]
        lease = super().acquire_identity(**kwargs)
        if lease.name in exclude:  # LRU picked it again: only happens when no other one is free
            raise AssertionError(f"{lease.name} was excluded")
        return lease


class RecordingStore(Store):
    """The real store with :class:`RecordingIdentityLeases`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.identity_leases = RecordingIdentityLeases(self.database)


@pytest.fixture(scope="module")
def runtime(pg_runtime: Runtime) -> Iterator[Runtime]:
    """A runtime of its own on the session's database, with quick run-level retries."""
    settings = pg_runtime.settings.model_copy(update={"run_retry_backoff_s": 0.05, "run_retry_backoff_max_s": 0.1})
    own = Runtime(settings).start()
    yield own
    own.stop()


@pytest.fixture
def recording(runtime: Runtime) -> Iterator[RecordingIdentityLeases]:
    store = RecordingStore(runtime.settings.database_url)
    saved = runtime.identities
    runtime.identities = IdentitySlots(store, runtime.secret_box, runtime.settings, runtime.owner)
    yield store.identity_leases
    runtime.identities = saved
    store.dispose()


def test_a_blocked_run_rotates_to_another_identity_of_its_pool(runtime: Runtime, recording: RecordingIdentityLeases,
                                                               demo) -> None:
    pool = f"pool-{uuid.uuid4().hex[:8]}"
    for name in ("a", "b"):
        runtime.store.identities.upsert_identity(name=f"{pool}-{name}", pool=pool)
    outcome = runtime.run_loaded(template(BLOCKED_PAGE), {"base_url": demo.url}, identity_pool=pool)
    assert (outcome.status, outcome.error_code) == ("failed", "BLOCKED"), outcome
    reasons = [t.reason for t in runtime.store.transitions.transitions(outcome.run_id) if t.to_status == "retrying"]
    assert len(reasons) == 1 and ROTATION_MARK in reasons[0], reasons
    first = reasons[0].rpartition(ROTATION_MARK)[2]
    assert first in {f"{pool}-a", f"{pool}-b"}
    assert recording.excludes == [(), (first,)]  # the second attempt excluded the first's identity
    uses = {name: runtime.store.identities.get_identity(f"{pool}-{name}").uses for name in ("a", "b")}
    assert uses == {"a": 1, "b": 1}  # each identity served one attempt
    # the exclusion is persisted: any other worker's slots read the same from the database
    elsewhere = Store(runtime.settings.database_url)
    try:
        slots = IdentitySlots(elsewhere, runtime.secret_box, runtime.settings, "elsewhere:1:1")
        assert slots.excluded(elsewhere.runs.get_run(outcome.run_id), attempt=3) == [first]
    finally:
        elsewhere.dispose()


class WaitingIdentityBusy(IdentityBusy):
    """The store's busy identity as the store branch gives it: WAIT, with a delay."""

    policy = ErrorClass.WAIT
    retry_in_s = 7.0


class ReviewedIdentity(IdentityBusy):
    policy = ErrorClass.NEEDS_REVIEW


def test_an_identity_error_is_decided_by_its_policy(runtime: Runtime, recording: RecordingIdentityLeases, demo) -> None:
    pool = f"pool-{uuid.uuid4().hex[:8]}"
    runtime.store.identities.upsert_identity(name=f"{pool}-a", pool=pool)
    recording.raise_instead = WaitingIdentityBusy(None, None, None, pool=pool, pool_size=1, leased=1)
    waiting = runtime.submit_local("quotes", {"start_url": f"{demo.url}/quotes/"}, identity_pool=pool)
    result = runtime.execute(waiting.run_id)
    assert isinstance(result, RetryLater) and result.countdown_s == 7.0
    run = runtime.store.runs.get_run(waiting.run_id)
    assert run.status == "retrying" and run.lease_owner is None
    assert run.status_reason.startswith("waiting 7 s: pool")

    recording.raise_instead = ReviewedIdentity(f"{pool}-a", "someone", None)
    reviewed = runtime.submit_local("quotes", {"start_url": f"{demo.url}/quotes/"}, identity_pool=pool)
    outcome = runtime.execute(reviewed.run_id)
    assert outcome.status == "needs_review" and runtime.store.runs.get_run(reviewed.run_id).status == "needs_review"

    recording.raise_instead = None
    runtime.store.identities.disable_identity(f"{pool}-a", "banned by the site")  # a pool with nothing usable
    gone = runtime.run_local("quotes", {"start_url": f"{demo.url}/quotes/"}, identity_pool=pool)
    assert (gone.status, gone.error_code) == ("failed", "IDENTITY_UNAVAILABLE")


def test_a_tenant_without_slots_waits_as_long_as_its_policy_says(runtime: Runtime, demo) -> None:
    tenant = f"paused-{uuid.uuid4().hex[:8]}"
    saved, limiter = runtime.tenants, TenantLimiter.from_settings(
        runtime.settings.model_copy(update={"tenant_caps": {tenant: 0}}))
    runtime.tenants = limiter
    try:
        prepared = runtime.submit_local("quotes", {"start_url": f"{demo.url}/quotes/"}, tenant=tenant)
        result = runtime.execute(prepared.run_id)
    finally:
        runtime.tenants = saved
        runtime.loop.run(limiter.aclose(), timeout=5)
    assert isinstance(result, RetryLater)
    assert result.countdown_s == runtime.settings.tenant_wait_s  # no claim to expire: one more wait
    run = runtime.store.runs.get_run(prepared.run_id)
    assert run.status == "retrying" and run.lease_owner is None and "paused" in run.status_reason


def test_a_read_only_run_writes_its_last_steps_with_its_end(pg_runtime: Runtime, demo,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 9, goal 3: a read-only run without checkpoints costs its record, its lease and its
    end — the journal's held-back steps go in the end's transaction, not one of their own."""
    settings = pg_runtime.settings.model_copy(update={"journal_flush_ms": 60_000})
    own = Runtime(settings).start()
    try:
        body = QUICK.replace("settings: {trace: off,", "settings: {trace: off, checkpoints: explicit,")
        prepared = prepare_loaded(template(body), {"base_url": demo.url})
        actions: list[str] = []
        real = own.store.database.tx

        def recording(action: str, body_: Any, **kwargs: Any) -> Any:
            actions.append(action)
            return real(action, body_, **kwargs)

        monkeypatch.setattr(own.store.database, "tx", recording)
        record_run(own.store, prepared, secret_box=None)
        outcome = own.execute(prepared.run_id)
        monkeypatch.undo()
        assert outcome.status == "completed", outcome
        writes = [a for a in actions if not a.startswith(("reading", "renewing the lease"))]
        assert [w.split()[0] for w in writes if "template" not in w] == ["creating", "acquiring", "finishing"], actions
        steps = own.store.steps.steps(prepared.run_id)
        assert [(s.action, s.status) for s in steps] == [("navigate", "succeeded"), ("get", "succeeded")]
        assert all(s.finished_at is not None for s in steps)
    finally:
        own.stop()


def test_one_execution_costs_two_transactions_besides_its_steps(runtime: Runtime, demo,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Lease + running + the run read in one transaction, the end (status, outputs, transition,
    lease given back) in another; the stored template is read once per process."""
    quick = prepare_loaded(template(QUICK), {"base_url": demo.url})
    record_run(runtime.store, quick, secret_box=None)
    again = prepare_loaded(quick.loaded, {"base_url": demo.url})
    record_run(runtime.store, again, secret_box=None)
    assert runtime.execute(quick.run_id).status == "completed"
    actions: list[str] = []
    commits: list[object] = []
    real = runtime.store.database.tx

    def recording(action: str, body: Any, **kwargs: Any) -> Any:
        actions.append(action)
        return real(action, body, **kwargs)

    def committed(connection: object) -> None:
        commits.append(connection)

    monkeypatch.setattr(runtime.store.database, "tx", recording)
    event.listen(runtime.store.engine, "commit", committed)
    try:
        outcome = runtime.execute(again.run_id)
    finally:
        event.remove(runtime.store.engine, "commit", committed)
    assert outcome.status == "completed", outcome
    # Steps and the runner's periodic lease renewals (time-dependent) are not the per-run part.
    per_run = [a for a in actions if "step" not in a and not a.startswith("renewing the lease")]
    assert len(per_run) == 2, actions
    assert per_run[0].startswith("acquiring a lease") and per_run[1].startswith("finishing run"), actions
    assert len(commits) == len(actions), (commits, actions)
    run = runtime.store.runs.get_run(again.run_id)
    assert run.lease_owner is None and run.lease_expires_at is None and run.outputs == outcome.outputs
    assert [t.to_status for t in runtime.store.transitions.transitions(again.run_id)] == ["queued", "running", "completed"]
