"""Handoffs in the store: the waiting_for_human status, its lease, and one-time live-view tokens."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from browserq.store import IllegalTransition, LeaseLost, RunStatus, Store
from browserq.store.handoffs import token_hash
from browserq.store.human_models import LiveToken
from tests.store.helpers import expire_lease, new_run


def _waiting(store: Store, **kw: object) -> tuple[str, int, int]:
    run_id = new_run(store)
    lease = store.leases.acquire_lease(run_id, owner="w1", ttl_s=30)
    handoff = store.handoffs.begin_handoff(
        run_id, token=lease.token, run_attempt=1, step_path="2", kind="step",
        message="solve the captcha", until="absent '#captcha'", timeout_s=60,
        live_base_url=kw.get("base", "http://127.0.0.1:9999"),  # type: ignore[arg-type]
    )
    return run_id, lease.token, handoff.id


def test_a_handoff_keeps_the_lease_and_goes_back_to_running(store: Store) -> None:
    run_id, token, handoff_id = _waiting(store)
    run = store.runs.get_run(run_id)
    assert run is not None and run.status == "waiting_for_human"
    assert run.lease_owner == "w1" and run.lease_token == token  # still held
    assert store.leases.renew_lease(run_id, token=token, ttl_s=30).status == "waiting_for_human"
    assert store.handoffs.open_handoff(run_id) is not None
    store.handoffs.end_handoff(run_id, token=token, handoff_id=handoff_id, outcome="condition", inputs=3,
                      resume=True, reason="handoff ended; running again")
    run = store.runs.get_run(run_id)
    assert run is not None and run.status == "running" and run.lease_token == token
    [handoff] = store.handoffs.handoffs(run_id)
    assert (handoff.outcome, handoff.inputs) == ("condition", 3) and handoff.ended_at is not None
    assert [t.to_status for t in store.transitions.transitions(run_id)][-2:] == ["waiting_for_human", "running"]


def test_a_stale_token_cannot_begin_or_end_a_handoff(store: Store) -> None:
    run_id = new_run(store)
    lease = store.leases.acquire_lease(run_id, owner="w1", ttl_s=30)
    with pytest.raises(LeaseLost):
        store.handoffs.begin_handoff(run_id, token=lease.token + 1, run_attempt=1, step_path="0",
                            kind="step", message="m", until=None, timeout_s=5, live_base_url=None)
    assert store.runs.get_run(run_id).status == "running"  # type: ignore[union-attr]


def test_waiting_runs_can_only_go_where_the_state_machine_says(store: Store) -> None:
    run_id, token, _ = _waiting(store)
    with pytest.raises(IllegalTransition):
        store.transitions.transition(run_id, "completed", reason="no: a person is working", token=token)
    store.transitions.finish_run(run_id, status="failed", outputs={}, error_code="HUMAN_TIMEOUT",
                     error_message="nobody came", token=token)
    run = store.runs.get_run(run_id)
    assert run is not None and run.status == "failed" and run.lease_owner is None
    [handoff] = store.handoffs.handoffs(run_id)
    assert handoff.outcome == "interrupted"  # closed with the run (the worker names its own)


def test_cancelling_a_waiting_run_asks_its_worker(store: Store) -> None:
    run_id, _, _ = _waiting(store)
    view = store.cancellation.request_cancel(run_id, reason="not needed")
    assert view.status == "waiting_for_human" and view.cancel_requested_at is not None


def test_a_waiting_run_whose_worker_died_is_swept_and_its_wait_closed(store: Store) -> None:
    run_id, _, _ = _waiting(store)
    expire_lease(store, run_id)
    assert [r.id for r in store.leases.stuck_runs(queued_older_than_s=60)] == [run_id]
    store.transitions.transition(run_id, "queued", reason="re-enqueued by the sweeper")
    run = store.runs.get_run(run_id)
    assert run is not None and run.status == "queued" and run.lease_owner is None
    assert store.handoffs.handoffs(run_id)[0].outcome == "interrupted"
    lease = store.leases.acquire_lease(run_id, owner="w2", ttl_s=30)
    assert lease.run.status == "running"


def test_a_takeover_of_a_waiting_run(store: Store) -> None:
    run_id, token, _ = _waiting(store)
    expire_lease(store, run_id)
    lease = store.leases.acquire_lease(run_id, owner="w2", ttl_s=30)
    assert lease.takeover and lease.token > token
    assert store.handoffs.handoffs(run_id)[0].outcome == "interrupted"


def test_live_tokens_open_once_and_are_stored_hashed(store: Store) -> None:
    run_id, _, handoff_id = _waiting(store)
    link = store.handoffs.mint_live_token(run_id, purpose="cli", ttl_s=60)
    assert link is not None and link.startswith(f"http://127.0.0.1:9999/live/{handoff_id}?token=")
    secret = link.split("token=", 1)[1]
    with store.engine.connect() as conn:
        stored = conn.execute(select(LiveToken.token_hash)).scalars().all()
    assert stored == [token_hash(secret)] and secret not in stored
    assert not store.handoffs.redeem_live_token("not-the-token", handoff_id=handoff_id)
    assert not store.handoffs.redeem_live_token(secret, handoff_id=handoff_id + 1)  # another handoff's
    assert store.handoffs.redeem_live_token(secret, handoff_id=handoff_id)
    assert not store.handoffs.redeem_live_token(secret, handoff_id=handoff_id)  # one time only


def test_live_tokens_expire_and_die_with_their_handoff(store: Store) -> None:
    run_id, token, handoff_id = _waiting(store)
    expired = store.handoffs.mint_live_token(run_id, purpose="cli", ttl_s=0.001)
    assert expired is not None
    import time

    time.sleep(0.05)
    assert not store.handoffs.redeem_live_token(expired.split("token=")[1], handoff_id=handoff_id)
    later = store.handoffs.mint_live_token(run_id, purpose="cli", ttl_s=60)
    assert later is not None
    store.handoffs.end_handoff(run_id, token=token, handoff_id=handoff_id, outcome="continued", inputs=0,
                      resume=True, reason="continued")
    assert not store.handoffs.redeem_live_token(later.split("token=")[1], handoff_id=handoff_id)
    assert store.handoffs.mint_live_token(run_id, purpose="cli") is None  # nobody waits now


def test_no_live_link_without_a_live_view(store: Store) -> None:
    run_id, _, _ = _waiting(store, base=None)
    assert store.handoffs.mint_live_token(run_id, purpose="cli") is None
    assert RunStatus(store.runs.get_run(run_id).status) is RunStatus.WAITING_FOR_HUMAN  # type: ignore[union-attr]


def test_a_handover_is_fenced_counted_and_no_lost_worker(store: Store) -> None:
    """A stopping worker's handover (waiting → retrying under its own lease) is counted by
    ``handovers`` (it spends no retry) and adds no takeover (no WORKER_LOST_REPEATEDLY)."""
    from browserq.store.handoffs import HANDOVER_REASON

    run_id, token, handoff_id = _waiting(store)
    assert store.handoffs.handovers(run_id) == 0
    store.handoffs.end_handoff(run_id, token=token, handoff_id=handoff_id, outcome="handed_over", inputs=0,
                      resume=False, reason="handoff ended: this worker is stopping")
    store.transitions.transition(run_id, "retrying", reason=f"{HANDOVER_REASON}: its worker is stopping", worker="w1",
                     token=token)
    run = store.runs.get_run(run_id)
    assert run is not None and run.status == "retrying" and run.takeovers == 0 and run.lease_owner is None
    assert store.handoffs.handovers(run_id) == 1
    lease = store.leases.acquire_lease(run_id, owner="w2", ttl_s=30)
    assert (lease.attempt, lease.takeovers, lease.takeover) == (2, 0, False)
    [handoff] = store.handoffs.handoffs(run_id)
    assert handoff.outcome == "handed_over"


def test_a_follow_token_leads_the_dead_workers_page_to_the_next_wait_once(store: Store) -> None:
    run_id, _, first = _waiting(store, base="http://127.0.0.1:9200")
    follow = store.handoffs.mint_follow_token(run_id, handoff_id=first, ttl_s=60)
    assert store.handoffs.redeem_live_token(follow, handoff_id=first) is False  # it opens no view itself
    assert store.handoffs.follow_handoff(follow, handoff_id=first).state == "waiting"  # the same wait: stay
    expire_lease(store, run_id)
    lease = store.leases.acquire_lease(run_id, owner="w2", ttl_s=30)  # the run is taken over
    assert store.handoffs.follow_handoff(follow, handoff_id=first).state == "waiting"  # not waiting again yet
    second = store.handoffs.begin_handoff(
        run_id, token=lease.token, run_attempt=2, step_path="2", kind="step", message="again", until=None,
        timeout_s=60, live_base_url="http://127.0.0.1:9201",
    )
    assert store.handoffs.follow_handoff("x" + follow, handoff_id=first).state == "refused"
    assert store.handoffs.follow_handoff(follow, handoff_id=second.id).state == "refused"  # another page's
    moved = store.handoffs.follow_handoff(follow, handoff_id=first)
    assert moved.state == "moved" and moved.url is not None
    assert moved.url.startswith(f"http://127.0.0.1:9201/live/{second.id}?token=")
    assert store.handoffs.redeem_live_token(moved.url.split("token=")[1], handoff_id=second.id) is True
    assert store.handoffs.follow_handoff(follow, handoff_id=first).state == "refused"  # used up
    again = store.handoffs.mint_follow_token(run_id, handoff_id=second.id)
    store.transitions.finish_run(run_id, status="failed", outputs={}, error_code="HUMAN_GAVE_UP", error_message="no",
                     token=lease.token)
    ended = store.handoffs.follow_handoff(again, handoff_id=second.id)
    assert (ended.state, ended.status) == ("ended", "failed")
