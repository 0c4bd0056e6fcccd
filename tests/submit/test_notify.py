"""``run_template.delay(..., notify=…)``: the URL is checked at the producer and refused with a
reason before anything is recorded or sent; without a secret to sign with nothing is accepted;
a cancel of a queued run sends its ``cancelled`` event as a delivery task at once."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from browserq import cancel_run, run_template
from browserq.errors import ConfigError, ParamError, TemplateInvalid
from browserq.settings import Settings
from browserq.store import Store
from tests.conftest import producer_env, template
from tests.submit.conftest import REDIS_URL, Producer, producer_settings

START = {"start_url": "http://127.0.0.1:8000/quotes/"}


def test_a_bad_notify_url_is_refused_before_anything_is_recorded(producer: Producer) -> None:
    for url, why in [("ftp://x.example/hook", "http:// or https://"), ("https://u:p@x.example/h", "credentials")]:
        with pytest.raises(ParamError, match=why):
            run_template.apply_async(args=["quotes"], kwargs={"params": START, "notify": url}, queue=producer.queue)
    with pytest.raises(ConfigError, match="BROWSERQ_WEBHOOK_SECRET is not set"):  # nothing to sign with
        run_template.apply_async(args=["quotes"], kwargs={"params": START, "notify": "https://x.example/h"},
                                 queue=producer.queue)
    assert producer.store.list_runs() == [] and producer.messages() == []


@pytest.fixture
def signing_producer(tmp_path: Path) -> Iterator[tuple[Store, Any]]:
    """A producer with a webhook secret and a queue of its own: its store (without a relay), and
    a function that reads the headers of the delivery tasks sent to ``<queue>.webhooks``."""
    queue = f"bq_notify_{uuid.uuid4().hex[:8]}"
    env = producer_settings(tmp_path, BROWSERQ_WEBHOOK_SECRET="whsec-x", BROWSERQ_QUEUE=queue)
    hooks = redis.Redis.from_url(REDIS_URL)
    with producer_env(env):
        store = Store(env["BROWSERQ_DATABASE_URL"])  # no relay: what it records stays unsent
        try:
            yield store, lambda: [json.loads(raw)["headers"] for raw in hooks.lrange(f"{queue}.webhooks", 0, -1)]
        finally:
            store.dispose()
            hooks.delete(queue, f"{queue}.webhooks")


def test_a_cancelled_runs_event_is_sent_for_delivery_at_once(signing_producer: Any) -> None:
    store, sent = signing_producer
    handle = run_template.delay("quotes", params=START, notify="https://hooks.example.com/browserq")
    assert cancel_run(handle.id) == "cancelled"  # through the producer's store, which relays
    assert store.get_run(handle.id).notify_url == "https://hooks.example.com/browserq"  # type: ignore[union-attr]
    [delivery] = store.webhook_deliveries(handle.id)
    assert (delivery.event, delivery.status) == ("cancelled", "pending")
    [headers] = sent()
    assert headers["task"] == "browserq.deliver_webhook" and headers["argsrepr"] == f"[{delivery.id}, 1]"


def test_a_templates_notify_is_checked_when_it_loads() -> None:
    with pytest.raises(TemplateInvalid, match="credentials"):
        template("""
            settings: {notify: "https://user:pw@hooks.example.com/x"}
            steps: [{action: navigate, url: "http://127.0.0.1/"}]
        """)
    loaded = template("""
        settings: {notify: "https://hooks.example.com/x"}
        steps: [{action: navigate, url: "http://127.0.0.1/"}]
    """)
    assert loaded.template.settings.notify == "https://hooks.example.com/x"


def test_a_fleet_wide_notify_url_needs_a_secret(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="BROWSERQ_WEBHOOK_SECRET is not"):
        Settings(database_url=f"sqlite:///{tmp_path}/x.db", notify_url="https://hooks.example.com/x")
    assert Settings(database_url=f"sqlite:///{tmp_path}/x.db", notify_url="https://hooks.example.com/x",
                    webhook_secret="s").notify_url == "https://hooks.example.com/x"


def test_an_event_nobody_sent_is_sent_by_the_sweep(signing_producer: Any) -> None:
    from datetime import timedelta

    from sqlalchemy import update

    from browserq.settings import get_settings
    from browserq.store.human_models import WebhookDelivery
    from browserq.store.models import utcnow
    from browserq.tasks import sweep_stuck_runs

    store, sent = signing_producer
    handle = run_template.delay("quotes", params=START, notify="https://hooks.example.com/browserq")
    store.request_cancel(handle.id, reason="gone")  # as if the process died after the commit
    [delivery] = store.webhook_deliveries(handle.id)
    assert sent() == []
    with store.engine.begin() as conn:
        conn.execute(update(WebhookDelivery).values(created_at=utcnow() - timedelta(seconds=30)))
    sweep_stuck_runs(store, get_settings())
    assert [h["argsrepr"] for h in sent()] == [f"[{delivery.id}, 1]"]
    assert store.overdue_webhooks() == []  # sent: not again at the next sweep
