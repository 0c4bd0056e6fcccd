"""Webhooks through a real worker (``-c 1``, Redis broker, PostgreSQL store):

- a slow receiver (one byte at a time, for ever) holds neither the worker's thread nor its only
  slot past ``BROWSERQ_WEBHOOK_TIMEOUT_S``: the first POST (from a thread) and the retry (a
  delivery task, in the slot) each end at the deadline, the event is given up after
  ``BROWSERQ_WEBHOOK_MAX_ATTEMPTS``, and the next run gets the slot;
- ``BROWSERQ_NOTIFY_URL`` set on the worker only (the producer has none) notifies every run
  without a notify URL of its own; a run's own URL still wins.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from browserq.store import Store
from tests.conftest import TEST_SECRET_KEY, producer_env
from tests.support.http import html_pages, serve_http
from tests.support.polling import wait_until
from tests.support.processes import stop
from tests.support.raw_tcp import raw_server
from tests.support.receiver import ALLOW_LOOPBACK_ENV, Receiver, webhook_receiver
from tests.support.redis import BROKER_DB, redis_url
from tests.support.templates import write_templates
from tests.support.workers import (
    browserq_env,
    browserq_worker_argv,
    spawn_worker,
    wait_for_log,
    worker_settings,
)

pytestmark = pytest.mark.slow

SECRET = "whsec-worker-" + uuid.uuid4().hex
TEMPLATE = """
params:
  base_url: {type: url, required: true}
settings: {trace: off, run_retries: 0, timeout_s: 30}
steps:
  - {action: navigate, url: "${base_url}/page"}
  - {id: text, action: get, selector: "#content", into: text}
"""


@dataclass
class HookedWorker:
    site: str
    fleet: Receiver  # the worker's BROWSERQ_NOTIFY_URL
    store: Store
    log: Path


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[HookedWorker]:
    tmp = tmp_path_factory.mktemp("worker-hooks")
    queue = f"bq_hooks_{uuid.uuid4().hex[:8]}"
    templates = write_templates(tmp / "templates", {"hooked": TEMPLATE})
    env = browserq_env(
        worker_settings(
            broker_url=redis_url(BROKER_DB),
            database_url=pg_url,
            templates_dir=templates,
            artifacts_dir=tmp / "artifacts",
            queue=queue,
            secret_key=TEST_SECRET_KEY,
        )
    )
    env.update(
        ALLOW_LOOPBACK_ENV,
        BROWSERQ_WEBHOOK_SECRET=SECRET,
        BROWSERQ_WEBHOOK_TIMEOUT_S="1",
        BROWSERQ_WEBHOOK_MAX_ATTEMPTS="2",
    )
    log = tmp / "worker.log"
    with (
        serve_http(html_pages({"/page": "<p id='content'>hello</p>"})) as host,
        webhook_receiver(SECRET) as fleet,
    ):
        worker_env = {**env, "BROWSERQ_NOTIFY_URL": fleet.url}
        proc = spawn_worker(browserq_worker_argv(queue), worker_env, log)
        store = Store(pg_url)
        try:
            wait_for_log(
                proc,
                log,
                lambda text: "ready." in text and "runtime started" in text,
                120,
                "the worker to warm its browser",
            )
            with producer_env(env):  # the producer: no BROWSERQ_NOTIFY_URL of its own
                yield HookedWorker(f"http://{host}", fleet, store, log)
        finally:
            stop(proc, 60, group=True)
            store.dispose()


def test_a_slow_receiver_holds_no_thread_or_slot_past_the_deadline(worker: HookedWorker) -> None:
    from browserq import run_template

    with raw_server("dribble", interval_s=0.3) as slow:  # each read gets a byte well within 1 s
        first = run_template.delay("hooked", params={"base_url": worker.site}, notify=slow.url())
        assert first.get(timeout=90)["status"] == "completed"
        [delivery] = wait_until(
            lambda: [d for d in worker.store.webhooks.webhook_deliveries(first.id) if d.status == "failed"],
            90,
            "the slow receiver's event to be given up after its 2 attempts",
        )
        wait_until(
            lambda: slow.seen() == (2, 2), 30, "both POSTs to have hung up on the slow receiver"
        )
    attempts = worker.store.webhooks.webhook_attempts(delivery.id)
    assert [a["attempt"] for a in attempts] == [1, 2] and delivery.attempts == 2
    assert all("BROWSERQ_WEBHOOK_TIMEOUT_S (1 s) in all" in (a["error"] or "") for a in attempts), (
        attempts
    )
    assert delivery.url == slow.url()  # the run's own URL wins over the worker's
    second = run_template.delay("hooked", params={"base_url": worker.site})
    assert second.get(timeout=90)["status"] == "completed"  # the only slot is free


def test_a_workers_notify_url_applies_to_runs_without_their_own(worker: HookedWorker) -> None:
    from browserq import run_template

    run = run_template.delay(
        "hooked", params={"base_url": worker.site}
    )  # no notify, none at the producer
    assert worker.store.runs.get_run(run.id).notify_url is None  # type: ignore[union-attr]
    assert run.get(timeout=90)["status"] == "completed"
    [completed] = wait_until(
        lambda: [r for r in worker.fleet.verified("completed") if r.data["run_id"] == run.id],
        60,
        "the completed webhook at the worker's BROWSERQ_NOTIFY_URL",
    )
    assert completed.data["result"]["outputs"] == {"text": "hello"}
    assert worker.store.runs.get_run(run.id).notify_url == worker.fleet.url  # type: ignore[union-attr]
