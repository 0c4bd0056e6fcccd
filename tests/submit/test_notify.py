"""``run_template.delay(..., notify=…)``: the URL is checked at the producer and refused with a
reason before anything is recorded or sent; without a secret to sign with nothing is accepted;
a cancel of a queued run sends its ``cancelled`` event as a delivery task at once."""

from __future__ import annotations

import json
import re
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
from tests.conftest import REPO, producer_env, template
from tests.submit.conftest import REDIS_URL, Producer, producer_settings
from tests.support.templates import write_templates

START = {"start_url": "http://127.0.0.1:8000/quotes/"}


def test_a_bad_notify_url_is_refused_before_anything_is_recorded(producer: Producer) -> None:
    for url, why in [("ftp://x.example/hook", "http:// or https://"), ("https://u:p@x.example/h", "credentials")]:
        with pytest.raises(ParamError, match=why):
            run_template.apply_async(args=["quotes"], kwargs={"params": START, "notify": url}, queue=producer.queue)
    with pytest.raises(ConfigError, match="BROWSERQ_WEBHOOK_SECRET is not set"):  # nothing to sign with
        run_template.apply_async(args=["quotes"], kwargs={"params": START, "notify": "https://x.example/h"},
                                 queue=producer.queue)
    assert producer.store.runs.list_runs() == [] and producer.messages() == []


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
    assert store.runs.get_run(handle.id).notify_url == "https://hooks.example.com/browserq"  # type: ignore[union-attr]
    [delivery] = store.webhooks.webhook_deliveries(handle.id)
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
    store.cancellation.request_cancel(handle.id, reason="gone")  # as if the process died after the commit
    [delivery] = store.webhooks.webhook_deliveries(handle.id)
    assert sent() == []
    with store.engine.begin() as conn:
        conn.execute(update(WebhookDelivery).values(created_at=utcnow() - timedelta(seconds=30)))
    sweep_stuck_runs(store, get_settings())
    assert [h["argsrepr"] for h in sent()] == [f"[{delivery.id}, 1]"]
    assert store.webhooks.overdue_webhooks() == []  # sent: not again at the next sweep


@pytest.mark.parametrize(("url", "why"), [
    ("http://169.254.169.254/latest/meta-data/", "link-local"),  # the cloud metadata service
    ("http://127.0.0.1:8080/hook", "loopback"),
    ("http://10.1.2.3/hook", "private"),
    ("http://172.16.0.1/hook", "private"),
    ("http://192.168.1.1/hook", "private"),
    ("http://100.64.0.1/hook", "shared (CGNAT)"),
    ("http://0.0.0.0:8080/hook", "unspecified"),
    ("http://224.0.0.1/hook", "multicast"),
    ("http://[::1]/hook", "loopback"),
    ("http://[fe80::1]/hook", "link-local"),
    ("http://[fd00::1]/hook", "private"),
    ("http://[::ffff:127.0.0.1]/hook", "that is 127.0.0.1"),
    ("http://[::ffff:169.254.169.254]/hook", "that is 169.254.169.254"),
    ("http://0x7f000001/hook", "unusual spelling"),
    ("http://2130706433/hook", "unusual spelling"),
    ("http://0177.0.0.1/hook", "unusual spelling"),
    ("http://127.1/hook", "unusual spelling"),
    ("http://127.0.0.1./hook", "loopback"),  # a trailing dot
    ("http://%31%32%37.0.0.1/hook", "not a host name"),  # percent-encoded: never decoded
    ("http://localhost:8080/hook", "this machine"),
    ("http://hooks.localhost/hook", "this machine"),
    ("https://hooks.example.com:0/hook", "port 0"),
    ("https://hооks.example.com/hook", "xn--"),  # Cyrillic о: a look-alike host
])
def test_a_notify_url_that_can_never_be_delivered_is_a_param_error(producer: Producer, url: str, why: str) -> None:
    with pytest.raises(ParamError, match=re.escape(why)) as refused:
        run_template.apply_async(args=["quotes"], kwargs={"params": START, "notify": url}, queue=producer.queue)
    if why not in ("port 0", "xn--", "unusual spelling", "unspecified", "multicast", "not a host name"):
        assert "BROWSERQ_WEBHOOK_ALLOWED" in str(refused.value)  # what to set for an internal receiver
    assert producer.store.runs.list_runs() == [] and producer.messages() == []


def test_a_templates_notify_is_checked_against_the_egress_policy_at_the_producer(
    producer: Producer, tmp_path: Path,
) -> None:
    write_templates(tmp_path / "templates", {"internal": """
        settings: {notify: "http://169.254.169.254/hook"}
        steps: [{action: navigate, url: "http://127.0.0.1/"}]
    """}, copy_from=REPO / "templates")
    env = producer_settings(tmp_path, BROWSERQ_TEMPLATES_DIR=str(tmp_path / "templates"))
    with producer_env(env), pytest.raises(ParamError, match="link-local"):
        run_template.apply_async(args=["internal"], queue=producer.queue)
    assert producer.messages() == []


def test_an_operator_allows_an_internal_receiver_by_network_or_by_host(tmp_path: Path) -> None:
    for extra in ({"BROWSERQ_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8"},
                  {"BROWSERQ_WEBHOOK_ALLOWED_HOSTS": "localhost, *.internal.example"}):
        env = producer_settings(tmp_path, **extra)
        with producer_env(env):
            url = "http://127.0.0.1:8080/hook" if "BROWSERQ_WEBHOOK_ALLOWED_NETWORKS" in extra else "http://localhost:8/h"
            with pytest.raises(ConfigError, match="BROWSERQ_WEBHOOK_SECRET is not set"):  # past the egress check
                run_template.delay("quotes", params=START, notify=url)
    with pytest.raises(ValueError, match="is not an address or CIDR"):
        Settings(database_url=f"sqlite:///{tmp_path}/x.db", webhook_allowed_networks="10.0.0.0/33")
    with pytest.raises(ValueError, match="no scheme, port or path"):
        Settings(database_url=f"sqlite:///{tmp_path}/x.db", webhook_allowed_hosts="https://hooks.internal")


def test_a_fleet_notify_url_outside_the_egress_policy_is_refused_when_settings_load(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"BROWSERQ_NOTIFY_URL: notify host 169\.254\.169\.254 is a link-local address"):
        Settings(database_url=f"sqlite:///{tmp_path}/x.db", notify_url="http://169.254.169.254/", webhook_secret="s")


def test_a_templates_notify_holding_an_interpolation_is_refused_when_it_loads() -> None:
    with pytest.raises(TemplateInvalid, match="never interpolated"):
        template("""
            params: {hook: {type: string}}
            settings: {notify: "https://hooks.example.com/${hook}"}
            steps: [{action: navigate, url: "http://127.0.0.1/"}]
        """)
