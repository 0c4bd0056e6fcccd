"""Run leases (browserq.store.leases): fencing tokens, takeovers, checkpoints and the sweeper's
stuck runs, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest

from browserq.errors import StoreError
from browserq.store import (
    Lease,
    LeaseBusy,
    LeaseLost,
    RunAlreadyFinished,
    RunStatus,
    Store,
)
from browserq.store.models import utcnow
from tests.store.helpers import age, count, expire_lease, new_run, run_in, step

S = RunStatus


def test_acquire_a_queued_run(store: Store) -> None:
    run_id = new_run(store)
    before = utcnow()
    lease = store.leases.acquire_lease(run_id, owner="host-a/1", ttl_s=30)
    assert isinstance(lease, Lease)
    assert (lease.run_id, lease.owner, lease.token, lease.attempt) == (run_id, "host-a/1", 1, 1)
    assert (lease.takeover, lease.takeovers) == (False, 0)
    assert before + timedelta(seconds=29) < lease.expires_at <= utcnow() + timedelta(seconds=30)
    run = store.runs.get_run(run_id)
    assert run is not None
    assert (run.status, run.lease_owner, run.lease_token, run.worker, run.attempt) == (
        "running",
        "host-a/1",
        1,
        "host-a/1",
        1,
    )
    assert run.lease_expires_at == lease.expires_at
    assert run.started_at is not None and run.heartbeat_at is not None and run.finished_at is None
    assert store.transitions.transitions(run_id)[-1].reason == "started by host-a/1"


def test_the_lease_carries_the_run_as_its_transaction_left_it(store: Store) -> None:
    run_id = new_run(store)
    store.leases.acquire_lease(run_id, owner="host-a/1", ttl_s=30)
    store.leases.save_checkpoint(run_id, token=1, checkpoint={"path": "2"})
    store.leases.release_lease(run_id, token=1)
    lease = store.leases.acquire_lease(run_id, owner="host-b/1", ttl_s=30)
    assert lease.run is not None and lease.run == store.runs.get_run(run_id)
    assert (lease.run.status, lease.run.lease_token, lease.run.attempt) == ("running", 2, 2)
    assert lease.run.checkpoint == {"path": "2"} and lease.run.lease_owner == "host-b/1"


def test_leaving_running_under_the_own_token_gives_the_lease_back(store: Store) -> None:
    for end in ("completed", "retrying"):
        run_id = new_run(store)
        lease = store.leases.acquire_lease(run_id, owner="host-a/1", ttl_s=30)
        if end == "completed":
            store.transitions.finish_run(run_id, status=end, outputs={"n": 1}, token=lease.token)
        else:
            store.transitions.transition(run_id, end, reason="retry later", token=lease.token)
        run = store.runs.get_run(run_id)
        assert (run.status, run.lease_owner, run.lease_expires_at, run.lease_token) == (end, None, None, 1)
    assert store.leases.acquire_lease(run_id, owner="host-b/1", ttl_s=30).token == 2  # the retrying one


def test_a_live_lease_is_busy(store: Store) -> None:
    run_id = new_run(store)
    lease = store.leases.acquire_lease(run_id, owner="a", ttl_s=30)
    with pytest.raises(LeaseBusy) as caught:
        store.leases.acquire_lease(run_id, owner="b", ttl_s=30)
    assert caught.value.holder == "a" and caught.value.expires_at == lease.expires_at
    assert "run by a" in str(caught.value)
    with pytest.raises(LeaseBusy):  # the holder is asked about, and is alive
        store.leases.acquire_lease(run_id, owner="b", ttl_s=30, holder_dead=lambda owner: False)
    run = store.runs.get_run(run_id)
    assert run is not None and (run.lease_owner, run.lease_token, run.attempt) == ("a", 1, 1)
    assert len(store.transitions.transitions(run_id)) == 2


def test_the_same_owner_may_reacquire(store: Store) -> None:
    run_id = new_run(store)
    first = store.leases.acquire_lease(run_id, owner="a", ttl_s=30)
    second = store.leases.acquire_lease(run_id, owner="a", ttl_s=30)
    assert second.token == first.token + 1 and second.attempt == 2
    with pytest.raises(LeaseLost):
        store.leases.renew_lease(run_id, token=first.token, ttl_s=30)
    store.leases.renew_lease(run_id, token=second.token, ttl_s=30)


def test_takeover_after_expiry(store: Store) -> None:
    run_id = new_run(store)
    first = store.leases.acquire_lease(run_id, owner="a", ttl_s=30)
    expire_lease(store, run_id)
    second = store.leases.acquire_lease(run_id, owner="b", ttl_s=30)
    assert (second.token, second.attempt, second.takeover, second.takeovers) == (2, 2, True, 1)
    assert store.transitions.transitions(run_id)[-1].reason == "taken over from a (lease expired)"
    assert [t.to_status for t in store.transitions.transitions(run_id)] == ["queued", "running", "running"]
    run = store.runs.get_run(run_id)
    assert run is not None and (run.lease_owner, run.worker, run.takeovers) == ("b", "b", 1)
    with pytest.raises(LeaseLost, match="token 2, held by b"):
        store.leases.renew_lease(run_id, token=first.token, ttl_s=30)


def test_takeover_from_a_dead_holder(store: Store) -> None:
    run_id = new_run(store)
    store.leases.acquire_lease(run_id, owner="a", ttl_s=300)
    asked: list[str] = []

    def dead(owner: str) -> bool:
        asked.append(owner)
        return owner == "a"

    lease = store.leases.acquire_lease(run_id, owner="b", ttl_s=30, holder_dead=dead)
    assert asked == ["a"]
    assert lease.takeover and lease.takeovers == 1 and lease.owner == "b"
    assert store.transitions.transitions(run_id)[-1].reason == "taken over from a (holder dead)"


def test_finished_runs_are_not_leased(store: Store) -> None:
    for status in (S.COMPLETED, S.FAILED, S.CANCELLED, S.NEEDS_REVIEW):
        run_id, _ = run_in(store, status)
        with pytest.raises(RunAlreadyFinished) as caught:
            store.leases.acquire_lease(run_id, owner="b", ttl_s=30)
        assert caught.value.run.status == status and caught.value.run.id == run_id
    with pytest.raises(StoreError, match="no such run"):
        store.leases.acquire_lease("nope", owner="b", ttl_s=30)
    with pytest.raises(ValueError):
        store.leases.acquire_lease("nope", owner="b", ttl_s=0)


def test_retrying_runs_are_leased_again(store: Store) -> None:
    run_id, first = run_in(store, S.RETRYING)
    assert first is not None
    lease = store.leases.acquire_lease(run_id, owner="b", ttl_s=30)
    assert (lease.token, lease.attempt, lease.takeover) == (first.token + 1, 2, False)


def test_renew_and_release(store: Store) -> None:
    run_id, lease = run_in(store, S.RUNNING)
    assert lease is not None
    age(store, run_id, heartbeat_at=100)
    renewed = store.leases.renew_lease(run_id, token=lease.token, ttl_s=120)
    assert renewed.lease_expires_at is not None and renewed.lease_expires_at > lease.expires_at
    assert renewed.heartbeat_at is not None and renewed.heartbeat_at > utcnow() - timedelta(
        seconds=5
    )
    assert not renewed.cancel_requested

    store.leases.release_lease(run_id, token=lease.token + 1)  # not ours: nothing happens
    assert store.runs.get_run(run_id).lease_owner == "w1"  # type: ignore[union-attr]
    store.leases.release_lease(run_id, token=lease.token)
    released = store.runs.get_run(run_id)
    assert released is not None and released.lease_owner is None and released.status == "running"
    assert released.lease_expires_at is not None and released.lease_expires_at <= utcnow()
    with pytest.raises(LeaseLost, match="released"):
        store.leases.renew_lease(run_id, token=lease.token, ttl_s=30)
    taken = store.leases.acquire_lease(run_id, owner="b", ttl_s=30)
    assert (
        taken.takeover
        and store.transitions.transitions(run_id)[-1].reason == "taken over from w1 (lease released)"
    )

    store.transitions.finish_run(run_id, status="completed", outputs={}, token=taken.token)
    with pytest.raises(LeaseLost, match="is completed"):
        store.leases.renew_lease(run_id, token=taken.token, ttl_s=30)
    store.leases.release_lease(run_id, token=taken.token)
    store.leases.release_lease("nope", token=1)
    with pytest.raises(StoreError, match="no such run"):
        store.leases.renew_lease("nope", token=1, ttl_s=30)


def test_many_leases_are_renewed_in_one_statement_and_each_says_what_it_saw(store: Store) -> None:
    """What one worker process's session renewer relies on: held leases pushed forward, a lease
    taken over (or of a run that ended, or released) not touched and seen lost, a cancel request
    read — all in one call."""
    held, held_lease = run_in(store, S.RUNNING)
    taken, taken_lease = run_in(store, S.RUNNING)
    ended, ended_lease = run_in(store, S.RUNNING)
    cancelled, cancelled_lease = run_in(store, S.RUNNING)
    assert held_lease and taken_lease and ended_lease and cancelled_lease
    expire_lease(store, taken)
    newer = store.leases.acquire_lease(taken, owner="w2", ttl_s=30)  # its token moved on
    store.transitions.finish_run(ended, status="completed", outputs={}, token=ended_lease.token)
    store.cancellation.request_cancel(cancelled, reason="enough")
    age(store, held, heartbeat_at=100, lease_expires_at=-1)
    tokens = {held: held_lease.token, taken: taken_lease.token, ended: ended_lease.token,
              cancelled: cancelled_lease.token}
    seen = store.leases.renew_leases(tokens, ttl_s=120)
    assert {run_id: (lease.renewed, lease.cancel_reason) for run_id, lease in seen.items()} == {
        held: (True, None), taken: (False, None), ended: (False, None), cancelled: (True, "enough")}
    run = store.runs.get_run(held)
    assert run is not None and run.lease_expires_at is not None
    assert run.lease_expires_at > utcnow() + timedelta(seconds=100)
    other = store.runs.get_run(taken)
    assert other is not None and other.lease_token == newer.token and other.lease_owner == "w2"
    assert other.lease_expires_at == newer.expires_at  # the new holder's lease untouched
    assert store.leases.renew_leases({}, ttl_s=30) == {}
    with pytest.raises(ValueError):
        store.leases.renew_leases(tokens, ttl_s=0)


def _fenced_writes(
    store: Store, run_id: str, token: int, step_id: int
) -> dict[str, Callable[[], object]]:
    return {
        "start_step": lambda: step(store, run_id, "9", run_attempt=1, token=token),
        "record_skipped_step": lambda: store.steps.record_skipped_step(
            run_id=run_id,
            run_attempt=1,
            step_path="8",
            step_id=None,
            attempt=1,
            action="click",
            inputs={},
            url_before=None,
            reason="when: false",
            token=token,
        ),
        "finish_step": lambda: store.steps.finish_step(
            step_id, status="succeeded", url_after=None, token=token
        ),
        "add_artifact": lambda: store.steps.add_artifact(
            run_id=run_id,
            step_attempt_id=step_id,
            kind="screenshot",
            path="x.png",
            content_type="image/png",
            size=1,
            sha256="e" * 64,
            token=token,
        ),
        "finish_run": lambda: store.transitions.finish_run(
            run_id, status="completed", outputs={"late": 1}, token=token
        ),
        "save_checkpoint": lambda: store.leases.save_checkpoint(
            run_id, token=token, checkpoint={"path": "9"}
        ),
        "transition": lambda: store.transitions.transition(run_id, "failed", reason="late", token=token),
        "renew_lease": lambda: store.leases.renew_lease(run_id, token=token, ttl_s=30),
    }


def test_every_fenced_write_refuses_a_lost_token(store: Store) -> None:
    run_id = new_run(store)
    old = store.leases.acquire_lease(run_id, owner="a", ttl_s=30)
    open_step = step(store, run_id, "0", token=old.token)
    store.leases.save_checkpoint(run_id, token=old.token, checkpoint={"path": "0"})
    expire_lease(store, run_id)
    new = store.leases.acquire_lease(run_id, owner="b", ttl_s=30)

    before = (
        store.runs.get_run(run_id),
        store.steps.steps(run_id),
        store.steps.artifacts(run_id),
        store.transitions.transitions(run_id),
    )
    for name, write in _fenced_writes(store, run_id, old.token, open_step).items():
        with pytest.raises(LeaseLost) as caught:
            write()
        assert caught.value.token == old.token and caught.value.current_token == new.token, name
        assert caught.value.holder == "b"
    store.leases.release_lease(run_id, token=old.token)  # no error, no effect
    after = (
        store.runs.get_run(run_id),
        store.steps.steps(run_id),
        store.steps.artifacts(run_id),
        store.transitions.transitions(run_id),
    )
    assert after == before
    assert before[0] is not None and before[0].checkpoint == {"path": "0"}

    # The new holder's writes all land.
    writes = _fenced_writes(store, run_id, new.token, open_step)
    for name in (
        "renew_lease",
        "start_step",
        "record_skipped_step",
        "finish_step",
        "add_artifact",
        "save_checkpoint",
        "finish_run",
    ):
        writes[name]()
    run = store.runs.get_run(run_id)
    assert run is not None and run.status == "completed" and run.checkpoint == {"path": "9"}


def test_unfenced_writes_still_work(store: Store) -> None:
    run_id, _lease = run_in(store, S.RUNNING)
    sid = step(store, run_id)
    store.steps.finish_step(sid, status="succeeded", url_after=None)
    store.transitions.finish_run(run_id, status="completed", outputs={})
    assert store.runs.get_run(run_id).status == "completed"  # type: ignore[union-attr]


@pytest.mark.parametrize("expired", [False, True], ids=["fresh", "expired"])
def test_concurrent_acquire_has_one_winner(store_url: str, expired: bool) -> None:
    setup = Store(store_url)
    run_id = new_run(setup)
    if expired:
        setup.leases.acquire_lease(run_id, owner="dead", ttl_s=30)
        expire_lease(setup, run_id)
    contenders = 8
    stores = [Store(store_url) for _ in range(contenders)]  # one engine each, like processes
    barrier = threading.Barrier(contenders)
    leases: list[Lease] = []
    busy: list[LeaseBusy] = []
    errors: list[BaseException] = []

    def contend(i: int) -> None:
        barrier.wait()
        try:
            leases.append(stores[i].leases.acquire_lease(run_id, owner=f"w{i}", ttl_s=30))
        except LeaseBusy as e:
            busy.append(e)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(contenders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert errors == []
        assert len(leases) == 1 and len(busy) == contenders - 1
        (winner,) = leases
        assert {e.holder for e in busy} == {winner.owner}
        run = setup.runs.get_run(run_id)
        assert run is not None and run.lease_owner == winner.owner
        assert run.lease_token == winner.token == (2 if expired else 1)
        assert run.takeovers == (1 if expired else 0) and winner.takeover == expired
        assert len(setup.transitions.transitions(run_id)) == (3 if expired else 2)
    finally:
        for s in [setup, *stores]:
            s.dispose()


# --- cancellation ---------------------------------------------------------------------------


# --- interrupted steps and sweeping -----------------------------------------------------------


def test_stuck_runs(store: Store) -> None:
    fresh_queued = new_run(store)
    old_queued = new_run(store)
    age(store, old_queued, queued_at=600)
    old_but_reenqueued = new_run(store)
    age(store, old_but_reenqueued, queued_at=600)
    store.runs.mark_enqueued(old_but_reenqueued)
    retrying, _ = run_in(store, S.RETRYING)
    age(store, retrying, queued_at=900, enqueued_at=900)
    live, _ = run_in(store, S.RUNNING)
    expired, _ = run_in(store, S.RUNNING)
    expire_lease(store, expired, seconds_ago=5)
    legacy = new_run(store)
    store.transitions.start_run(legacy, worker="in-process")  # no lease: never swept
    age(store, legacy, heartbeat_at=3600, started_at=3600)
    finished, _ = run_in(store, S.COMPLETED)
    age(store, finished, queued_at=3600)

    stuck = store.leases.stuck_runs(queued_older_than_s=300)
    assert {r.id for r in stuck} == {old_queued, retrying, expired}
    assert [r.id for r in stuck] == [retrying, old_queued, expired]  # oldest first
    assert [r.id for r in store.leases.stuck_runs(queued_older_than_s=300, limit=1)] == [retrying]
    assert fresh_queued in {r.id for r in store.leases.stuck_runs(queued_older_than_s=0)}
    assert live not in {r.id for r in store.leases.stuck_runs(queued_older_than_s=0)}
    with pytest.raises(StoreError, match="no such run"):
        store.runs.mark_enqueued("nope")
    enqueued = store.runs.get_run(old_but_reenqueued)
    assert enqueued is not None and enqueued.enqueued_at is not None


def test_sweeper_round_trip(store: Store) -> None:
    """What a sweeper does with a run whose worker vanished: requeue, mark, re-lease."""
    run_id = new_run(store)
    lease = store.leases.acquire_lease(run_id, owner="a", ttl_s=30)
    step(store, run_id, "0", run_attempt=lease.attempt, token=lease.token)
    expire_lease(store, run_id)
    (stuck,) = store.leases.stuck_runs(queued_older_than_s=300)
    store.transitions.transition(stuck.id, "queued", reason="lease of a expired; re-enqueued", worker="sweeper")
    store.runs.mark_enqueued(stuck.id)
    assert store.leases.stuck_runs(queued_older_than_s=300) == []
    again = store.leases.acquire_lease(run_id, owner="b", ttl_s=30)
    assert (again.takeover, again.attempt, again.token) == (False, 2, lease.token + 2)
    assert [
        s.status for s in store.steps.mark_interrupted_steps(run_id, before_attempt=again.attempt)
    ] == ["unknown"]
    assert count(store, "run_transitions", "run_id = :r", r=run_id) == 4
