"""The webhook outbox on both databases: an event row with the status change it reports, one
POST per attempt however many messages ask for it, retries and give-ups recorded, lost messages
found by the sweep; and the POSTs themselves, signed, to a receiver served here."""

from __future__ import annotations

from pathlib import Path

import pytest

from browserq.store import LeaseLost, Store
from browserq.store.relay import WebhookRelay
from browserq.tasks.webhooks import backoff_s, deliver
from tests.conftest import make_settings
from tests.store.helpers import new_run
from tests.support.http import free_port
from tests.support.receiver import ALLOW_LOOPBACK, webhook_receiver

SECRET = "whsec-test-0123456789abcdef"


def _finished(store: Store, notify_url: str | None, status: str = "completed") -> str:
    run_id = new_run(store, notify_url=notify_url)
    lease = store.leases.acquire_lease(run_id, owner="w1", ttl_s=30)
    store.transitions.finish_run(run_id, status=status, outputs={"title": "ok"}, token=lease.token,
                     error_code="ASSERTION_FAILED" if status == "failed" else None)
    return run_id


def test_an_event_is_queued_with_the_status_change_and_handed_to_the_listener(store_url: str) -> None:
    told: list[list[int]] = []
    store = Store(store_url, webhook_relay=WebhookRelay(send=lambda _store, ids: told.append(ids)))
    try:
        quiet = _finished(store, None)
        assert store.webhooks.webhook_deliveries(quiet) == [] and told == []  # no URL, no event
        run_id = _finished(store, "http://127.0.0.1:9/hook")
        [delivery] = store.webhooks.webhook_deliveries(run_id)
        assert told == [[delivery.id]]  # after the commit, once
        assert (delivery.event, delivery.status, delivery.attempts) == ("completed", "pending", 0)
        assert delivery.event_key == f"{run_id}:completed:1"
        assert delivery.payload["result"] == {"run_id": run_id, "status": "completed", "outputs": {"title": "ok"},
                                              "error": None, "warnings": []}
        assert "params" not in delivery.payload and "ann" not in repr(delivery.payload)  # params never sent
    finally:
        store.dispose()


def test_a_refused_transition_queues_nothing(store: Store) -> None:
    run_id = new_run(store, notify_url="http://127.0.0.1:9/hook")
    lease = store.leases.acquire_lease(run_id, owner="w1", ttl_s=30)
    with pytest.raises(LeaseLost):
        store.transitions.finish_run(run_id, status="completed", outputs={}, token=lease.token + 7)  # fenced out
    assert store.webhooks.webhook_deliveries(run_id) == []


def test_one_post_per_attempt_however_many_messages_ask(store: Store) -> None:
    run_id = _finished(store, "http://127.0.0.1:9/hook")
    [delivery] = store.webhooks.webhook_deliveries(run_id)
    assert store.webhooks.claim_webhook(delivery.id, 1, hold_s=30) is not None
    assert store.webhooks.claim_webhook(delivery.id, 1, hold_s=30) is None  # a duplicate message: held
    assert store.webhooks.claim_webhook(delivery.id, 2, hold_s=30) is None  # not its turn
    store.webhooks.record_webhook_attempt(delivery.id, 1, outcome="retry", status_code=503, error="HTTP 503",
                                 duration_ms=3.0, retry_in_s=5)
    assert store.webhooks.claim_webhook(delivery.id, 1, hold_s=30) is None  # attempt 1 was made
    assert store.webhooks.claim_webhook(delivery.id, 2, hold_s=30) is not None
    assert [a["status_code"] for a in store.webhooks.webhook_attempts(delivery.id)] == [503]


def test_deliveries_whose_message_was_lost_are_found_by_the_sweep(store: Store) -> None:
    from datetime import timedelta

    from sqlalchemy import update

    from browserq.store.human_models import WebhookDelivery
    from browserq.store.models import utcnow

    run_id = _finished(store, "http://127.0.0.1:9/hook")
    [delivery] = store.webhooks.webhook_deliveries(run_id)
    assert store.webhooks.overdue_webhooks() == []  # new: its own process sends it
    with store.engine.begin() as conn:  # as if it was created a while ago and nobody sent it
        conn.execute(update(WebhookDelivery).values(created_at=utcnow() - timedelta(seconds=30),
                                                    next_attempt_at=utcnow() - timedelta(seconds=120)))
    assert store.webhooks.overdue_webhooks() == [(delivery.id, 1)]
    store.webhooks.mark_webhooks_sent([delivery.id])
    assert store.webhooks.overdue_webhooks() == [(delivery.id, 1)]  # sent, but long overdue: lost
    store.webhooks.claim_webhook(delivery.id, 1, hold_s=60)
    assert store.webhooks.overdue_webhooks() == []  # someone is POSTing it


def test_a_failing_receiver_is_tried_again_then_gets_it_signed(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, webhook_secret=SECRET, **ALLOW_LOOPBACK)
    with webhook_receiver(SECRET, answers=[500, 429]) as receiver:
        run_id = _finished(store, receiver.url, status="failed")
        [delivery] = store.webhooks.webhook_deliveries(run_id)
        assert deliver(store, settings, delivery.id, 1) == backoff_s(1) == 5.0
        assert deliver(store, settings, delivery.id, 2) == backoff_s(2) == 10.0
        assert deliver(store, settings, delivery.id, 3) is None
        assert deliver(store, settings, delivery.id, 3) is None  # a duplicate: nothing sent
    assert len(receiver.got) == 3 and all(r.verified for r in receiver.got)
    assert len({r.headers["X-Browserq-Delivery"] for r in receiver.got}) == 1
    body = receiver.got[-1].data
    assert (body["event"], body["run_id"], body["result"]["error"]["code"]) == ("failed", run_id, "ASSERTION_FAILED")
    [done] = store.webhooks.webhook_deliveries(run_id)
    assert (done.status, done.attempts, done.delivered_at is not None) == ("delivered", 3, True)
    assert [a["status_code"] for a in store.webhooks.webhook_attempts(done.id)] == [500, 429, 200]


def test_a_refusal_gives_up_at_once_and_a_dead_receiver_after_the_last_attempt(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, webhook_secret=SECRET, webhook_max_attempts=2, **ALLOW_LOOPBACK)
    with webhook_receiver(SECRET, answers=[400]) as receiver:
        refused = _finished(store, receiver.url)
        [delivery] = store.webhooks.webhook_deliveries(refused)
        assert deliver(store, settings, delivery.id, 1) is None  # a 4xx: the receiver said no
    assert store.webhooks.webhook_deliveries(refused)[0].status == "failed"
    dead = _finished(store, f"http://127.0.0.1:{free_port()}/hook")  # nothing listens there
    [delivery] = store.webhooks.webhook_deliveries(dead)
    assert deliver(store, settings, delivery.id, 1) == 5.0
    assert deliver(store, settings, delivery.id, 2) is None  # the last of 2
    [gone] = store.webhooks.webhook_deliveries(dead)
    assert gone.status == "failed" and "Connection" in (gone.last_error or "")
    assert [a["status_code"] for a in store.webhooks.webhook_attempts(gone.id)] == [None, None]


def test_a_worker_without_the_secret_sends_nothing_unsigned(store: Store, tmp_path: Path) -> None:
    with webhook_receiver(SECRET) as receiver:
        run_id = _finished(store, receiver.url)
        [delivery] = store.webhooks.webhook_deliveries(run_id)
        assert deliver(store, make_settings(tmp_path), delivery.id, 1) is None
    assert receiver.got == []
    assert "BROWSERQ_WEBHOOK_SECRET" in (store.webhooks.webhook_deliveries(run_id)[0].last_error or "")
