"""Every way a POST can fail is one recorded attempt with a reason, and retries stop at
``BROWSERQ_WEBHOOK_MAX_ATTEMPTS``: a receiver answering garbage (not HTTP), resetting the
connection, hanging up without a word, or a TLS client meeting a plain server. And a slow
receiver (one byte at a time) is cut off at ``BROWSERQ_WEBHOOK_TIMEOUT_S`` for the whole POST,
while the sweep leaves the event alone as long as that POST is in flight."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from browserq.store import Store
from browserq.store.human_models import WebhookDelivery
from browserq.store.models import utcnow
from browserq.tasks.webhooks import deliver
from tests.conftest import make_settings
from tests.support.polling import wait_until
from tests.support.raw_tcp import raw_server
from tests.support.receiver import ALLOW_LOOPBACK
from tests.webhooks.conftest import completed_event

SECRET = "whsec-failures-0123456789"




@pytest.mark.parametrize(
    ("behaviour", "scheme", "reason"),
    [
        ("garbage", "http", "not an HTTP answer: BadStatusLine"),
        ("reset", "http", "Connection"),
        ("hang_up", "http", "RemoteDisconnected"),
        ("garbage", "https", "TLS failed"),  # TLS to a server that does not speak it
    ],
)
def test_each_failure_is_an_attempt_and_the_last_one_gives_up(
    store: Store,
    tmp_path: Path,
    behaviour: str,
    scheme: str,
    reason: str,
) -> None:
    settings = make_settings(
        tmp_path,
        webhook_secret=SECRET,
        webhook_max_attempts=2,
        webhook_timeout_s=5,
        **ALLOW_LOOPBACK,
    )
    with raw_server(behaviour) as server:  # type: ignore[arg-type]
        delivery_id = completed_event(store, server.url(scheme))
        assert deliver(store, settings, delivery_id, 1) == 5.0  # recorded, tried again later
        assert deliver(store, settings, delivery_id, 2) is None  # the last of 2: given up
        assert deliver(store, settings, delivery_id, 3) is None  # nothing after that
        assert server.seen()[0] == 2
    attempts = store.webhooks.webhook_attempts(delivery_id)
    assert [a["status_code"] for a in attempts] == [None, None]
    assert all(reason in (a["error"] or "") for a in attempts), attempts
    assert "/hooks/browserq" not in repr(attempts)  # never the URL's path
    [gone] = [d for d in store.webhooks.webhook_deliveries(store.runs.list_runs()[0].id)]
    assert (gone.status, gone.attempts) == ("failed", 2)


def test_a_slow_receiver_is_cut_off_at_the_deadline_and_never_posted_twice_meanwhile(
    store: Store,
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, webhook_secret=SECRET, webhook_timeout_s=2, **ALLOW_LOOPBACK)
    with raw_server("dribble", interval_s=0.3) as server:  # each read gets a byte well within 2 s
        delivery_id = completed_event(store, server.url())
        outcome: list[float | None] = []
        posting = threading.Thread(
            target=lambda: outcome.append(deliver(store, settings, delivery_id, 1)), daemon=True
        )
        posting.start()
        wait_until(lambda: server.seen()[0] == 1, 10, "the POST to reach the slow receiver")
        with store.engine.begin() as conn:  # to the sweep it looks long lost...
            conn.execute(
                update(WebhookDelivery).values(
                    created_at=utcnow() - timedelta(seconds=300),
                    next_attempt_at=utcnow() - timedelta(seconds=300),
                )
            )
        assert store.webhooks.overdue_webhooks() == []  # ...but its POST is in flight: not sent again
        wait_until(
            lambda: store.webhooks.webhook_attempts(delivery_id), 30, "the slow POST to end at its deadline"
        )
        wait_until(lambda: server.seen()[1] == 1, 10, "browserq to hang up on the slow receiver")
        posting.join(10)
    [attempt] = store.webhooks.webhook_attempts(delivery_id)
    assert attempt["status_code"] is None
    assert (
        "timeout" in attempt["error"]
        and "BROWSERQ_WEBHOOK_TIMEOUT_S (2 s) in all" in attempt["error"]
    )
    assert outcome == [5.0]  # a timeout is tried again


def test_first_posts_past_the_thread_cap_go_to_the_delivery_task(tmp_path: Path) -> None:
    """``BROWSERQ_WEBHOOK_THREADS=1``: while one first POST is stuck on a slow receiver, the next
    event does not take another thread of the worker; it is sent as a delivery task."""
    import json
    import uuid

    import redis

    from browserq.settings import get_settings
    from browserq.tasks.webhooks import threaded_relay
    from tests.conftest import producer_env
    from tests.submit.conftest import REDIS_URL, producer_settings
    from tests.support.receiver import ALLOW_LOOPBACK_ENV

    queue = f"bq_hook_threads_{uuid.uuid4().hex[:8]}"
    env = producer_settings(
        tmp_path,
        BROWSERQ_WEBHOOK_SECRET=SECRET,
        BROWSERQ_QUEUE=queue,
        BROWSERQ_WEBHOOK_THREADS="1",
        BROWSERQ_WEBHOOK_TIMEOUT_S="3",
        **ALLOW_LOOPBACK_ENV,
    )
    hooks = redis.Redis.from_url(REDIS_URL)

    def sent() -> list[str]:
        return [
            json.loads(raw)["headers"]["argsrepr"]
            for raw in hooks.lrange(f"{queue}.webhooks", 0, -1)
        ]

    with producer_env(env), raw_server("dribble", interval_s=0.3) as server:
        # as a worker does: first POSTs from threads of its own
        store = Store(env["BROWSERQ_DATABASE_URL"], webhook_relay=threaded_relay(get_settings()))
        store.schema.upgrade()
        try:
            first = completed_event(store, server.url())
            wait_until(
                lambda: server.seen()[0] == 1, 10, "the first POST to reach the slow receiver"
            )
            second = completed_event(store, server.url())
            assert wait_until(sent, 10, "the second event's delivery task") == [f"[{second}, 1]"]
            assert server.seen()[0] == 1  # no second thread, no second connection
            wait_until(
                lambda: store.webhooks.webhook_attempts(first), 30, "the first POST to end at its deadline"
            )
        finally:
            store.dispose()
            hooks.delete(queue, f"{queue}.webhooks")
