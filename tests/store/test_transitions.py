"""The run state machine (browserq.store.states, browserq.store.transitions): the LEGAL table,
check_transition, and every status change on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools

import pytest

from browserq.errors import StoreError
from browserq.store import (
    LEGAL,
    IllegalTransition,
    LeaseLost,
    RunStatus,
    Store,
    check_transition,
)
from tests.store.helpers import count, new_run, run_in, template

S = RunStatus
ALL_LEGAL = [(frm, to) for frm, targets in LEGAL.items() for to in sorted(targets)]
ALL_ILLEGAL = [(frm, to) for frm in S for to in S if to not in LEGAL[frm]]


def test_the_table() -> None:
    assert set(LEGAL) == set(S)
    assert LEGAL[S.QUEUED] == {S.RUNNING, S.CANCELLED, S.FAILED}
    assert LEGAL[S.RUNNING] == {
        S.COMPLETED,
        S.FAILED,
        S.CANCELLED,
        S.NEEDS_REVIEW,
        S.RETRYING,
        S.RUNNING,
        S.QUEUED,
        S.WAITING_FOR_HUMAN,
    }
    assert LEGAL[S.WAITING_FOR_HUMAN] == {S.RUNNING, S.FAILED, S.CANCELLED, S.QUEUED, S.RETRYING}
    assert LEGAL[S.RETRYING] == {S.RUNNING, S.CANCELLED, S.FAILED, S.QUEUED}
    assert LEGAL[S.NEEDS_REVIEW] == {S.COMPLETED, S.FAILED, S.CANCELLED, S.QUEUED}  # resolved
    for final in (S.COMPLETED, S.FAILED, S.CANCELLED):
        assert LEGAL[final] == frozenset()
    for frm, to in ALL_LEGAL:
        check_transition(frm, to)
    for frm, to in ALL_ILLEGAL:
        with pytest.raises(IllegalTransition):
            check_transition(frm.value, to.value)


def test_illegal_transition_message() -> None:
    with pytest.raises(IllegalTransition) as caught:
        check_transition("queued", "completed", run_id="r1")
    error = caught.value
    assert isinstance(error, StoreError)
    assert (error.run_id, error.from_status, error.to_status) == ("r1", S.QUEUED, S.COMPLETED)
    assert str(error) == (
        "illegal transition of run r1: queued → completed; "
        "from queued it may go to: cancelled, failed, running"
    )
    with pytest.raises(IllegalTransition, match="none \\(it is final\\)"):
        check_transition("completed", "running")


@pytest.mark.parametrize(
    ("frm", "to"), [(f, t) for f, t in ALL_LEGAL if (f, t) != (S.RUNNING, S.RUNNING)]
)
def test_every_legal_transition(store: Store, frm: RunStatus, to: RunStatus) -> None:
    run_id, _lease = run_in(store, frm)
    before = store.runs.get_run(run_id)
    assert before is not None and before.status == frm
    after = store.transitions.transition(
        run_id, to, reason=f"test {frm}->{to}", worker="op", fields={"error_code": "X"}
    )
    assert after.status == to and after.error_code == "X"
    assert after.status_reason == f"test {frm}->{to}"
    assert (after.finished_at is not None) == (
        to in {S.COMPLETED, S.FAILED, S.CANCELLED, S.NEEDS_REVIEW}
    )
    last = store.transitions.transitions(run_id)[-1]
    assert (last.from_status, last.to_status, last.reason, last.worker) == (
        frm.value,
        to.value,
        f"test {frm}->{to}",
        "op",
    )
    assert store.runs.get_run(run_id) == after


def test_running_to_running_is_only_a_takeover(store: Store) -> None:
    run_id, _lease = run_in(store, S.RUNNING)
    with pytest.raises(IllegalTransition, match="only acquire_lease"):
        store.transitions.transition(run_id, S.RUNNING, reason="again")
    assert len(store.transitions.transitions(run_id)) == 2


ILLEGAL_SAMPLE = [
    (S.QUEUED, S.COMPLETED),
    (S.QUEUED, S.NEEDS_REVIEW),
    (S.QUEUED, S.RETRYING),
    (S.QUEUED, S.QUEUED),
    (S.RETRYING, S.COMPLETED),
    (S.RETRYING, S.RETRYING),
    (S.NEEDS_REVIEW, S.RUNNING),
    (S.NEEDS_REVIEW, S.RETRYING),
    (S.COMPLETED, S.RUNNING),
    (S.COMPLETED, S.FAILED),
    (S.FAILED, S.QUEUED),
    (S.CANCELLED, S.COMPLETED),
]


@pytest.mark.parametrize(("frm", "to"), ILLEGAL_SAMPLE)
def test_illegal_transitions_write_nothing(store: Store, frm: RunStatus, to: RunStatus) -> None:
    run_id, _lease = run_in(store, frm)
    before = store.runs.get_run(run_id)
    history = store.transitions.transitions(run_id)
    with pytest.raises(IllegalTransition) as caught:
        store.transitions.transition(run_id, to, reason="nope", fields={"error_code": "NOPE"})
    assert caught.value.run_id == run_id
    assert store.runs.get_run(run_id) == before
    assert store.transitions.transitions(run_id) == history


def test_history_of_a_run(store: Store) -> None:
    run_id = new_run(store)
    first = store.leases.acquire_lease(run_id, owner="host-a/1", ttl_s=30)
    store.transitions.transition(
        run_id,
        "retrying",
        reason="PAGE_CRASHED: renderer died",
        token=first.token,
        worker="host-a/1",
    )
    store.transitions.transition(run_id, "queued", reason="retry due", worker="sweeper")
    second = store.leases.acquire_lease(run_id, owner="host-b/2", ttl_s=30)
    store.transitions.finish_run(
        run_id,
        status="needs_review",
        outputs={"x": 1},
        error_code="OUTCOME_UNKNOWN",
        error_message="the payment click may have happened",
        token=second.token,
    )
    store.transitions.transition(run_id, "completed", reason="operator confirmed the payment", worker="alice")

    history = store.transitions.transitions(run_id)
    assert [(t.from_status, t.to_status) for t in history] == [
        (None, "queued"),
        ("queued", "running"),
        ("running", "retrying"),
        ("retrying", "queued"),
        ("queued", "running"),
        ("running", "needs_review"),
        ("needs_review", "completed"),
    ]
    assert [t.reason for t in history] == [
        "enqueued",
        "started by host-a/1",
        "PAGE_CRASHED: renderer died",
        "retry due",
        "started by host-b/2",
        "OUTCOME_UNKNOWN: the payment click may have happened",
        "operator confirmed the payment",
    ]
    assert [t.worker for t in history] == [
        None,
        "host-a/1",
        "host-a/1",
        "sweeper",
        "host-b/2",
        "host-b/2",
        "alice",
    ]
    assert [t.id for t in history] == sorted(t.id for t in history)
    assert all(a.at <= b.at for a, b in itertools.pairwise(history))
    run = store.runs.get_run(run_id)
    assert run is not None
    assert (run.status, run.status_reason, run.attempt, run.outputs) == (
        "completed",
        "operator confirmed the payment",
        2,
        {"x": 1},
    )
    assert run.finished_at is not None
    store.runs.delete_run(run_id)
    assert store.transitions.transitions(run_id) == [] and count(store, "run_transitions") == 0


def test_finish_run_is_checked_and_logged(store: Store) -> None:
    run_id = new_run(store)
    with pytest.raises(IllegalTransition):
        store.transitions.finish_run(run_id, status="completed", outputs={})
    store.transitions.finish_run(
        run_id, status="failed", outputs=None, error_code="TEMPLATE_INVALID", error_message="bad"
    )
    run = store.runs.get_run(run_id)
    assert run is not None and (run.status, run.error_code) == ("failed", "TEMPLATE_INVALID")
    assert store.transitions.transitions(run_id)[-1].reason == "TEMPLATE_INVALID: bad"
    with pytest.raises(IllegalTransition):
        store.transitions.finish_run(run_id, status="completed", outputs={})


def test_start_run_logs_transitions(store: Store) -> None:
    run_id = new_run(store)
    store.transitions.start_run(run_id, worker="a")
    again = store.transitions.start_run(run_id, worker="b")
    assert (again.attempt, again.takeovers, again.worker) == (2, 1, "b")
    assert [t.reason for t in store.transitions.transitions(run_id)] == [
        "enqueued",
        "started by a",
        "restarted by b (was running on a)",
    ]
    store.transitions.finish_run(run_id, status="completed", outputs={})
    with pytest.raises(IllegalTransition):
        store.transitions.start_run(run_id, worker="c")


def test_transition_arguments(store: Store) -> None:
    run_id, lease = run_in(store, S.RUNNING)
    assert lease is not None
    with pytest.raises(ValueError, match="unknown run status"):
        store.transitions.transition(run_id, "exploded", reason="x")
    with pytest.raises(ValueError, match="cannot set"):
        store.transitions.transition(run_id, "failed", reason="x", fields={"status": "completed"})
    with pytest.raises(ValueError, match="cannot set"):
        store.transitions.transition(run_id, "failed", reason="x", fields={"no_such_column": 1})
    with pytest.raises(StoreError, match="no such run"):
        store.transitions.transition("nope", "failed", reason="x")
    with pytest.raises(LeaseLost):
        store.transitions.transition(run_id, "completed", reason="x", token=lease.token + 5)
    view = store.transitions.transition(
        run_id,
        "needs_review",
        reason="x",
        token=lease.token,
        fields={"status_reason": "a person must check the order", "outputs": {"o": 1}},
    )
    assert view.status_reason == "a person must check the order" and view.outputs == {"o": 1}


def test_leaving_running_ends_the_lease(store: Store) -> None:
    # By the holder (fenced): the token stays, so its own late writes still land.
    run_id, lease = run_in(store, S.RUNNING)
    assert lease is not None
    done = store.transitions.transition(run_id, "completed", reason="ok", token=lease.token)
    assert (done.lease_owner, done.lease_expires_at, done.lease_token) == (None, None, lease.token)
    store.steps.add_artifact(
        run_id=run_id,
        step_attempt_id=None,
        kind="trace",
        path="t.zip",
        content_type="application/zip",
        size=1,
        sha256="f" * 64,
        token=lease.token,
    )
    # By anyone else (the sweeper): the token moves on, fencing the old holder out.
    run_id, lease = run_in(store, S.RUNNING)
    assert lease is not None
    requeued = store.transitions.transition(
        run_id, "queued", reason="lease expired; re-enqueued", worker="sweeper"
    )
    assert requeued.lease_token == lease.token + 1 and requeued.lease_owner is None
    with pytest.raises(LeaseLost):
        store.leases.save_checkpoint(run_id, token=lease.token, checkpoint={"path": "3"})


def test_non_terminal_finish_leaves_finished_at_empty(store: Store) -> None:
    run_id = new_run(store, template(store))
    store.transitions.start_run(run_id, worker="w")
    store.transitions.finish_run(run_id, status="retrying", outputs=None, error_code="WORKER_LOST")
    run = store.runs.get_run(run_id)
    assert run is not None and run.status == "retrying" and run.finished_at is None
    assert not run.terminal
    store.runs.heartbeat(run_id)
