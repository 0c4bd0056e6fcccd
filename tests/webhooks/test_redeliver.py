"""``browserq webhooks redeliver``: events given up while their receiver was down are sent again.

A real worker (``-c 1``, Redis broker, PostgreSQL store) and a real receiver that answers 503 (it
is down) for every POST of the retry schedule (``BROWSERQ_WEBHOOK_MAX_ATTEMPTS=2`` here; 8 by
default, ~10.6 min), then 200. The command, run as a user runs it, queues each failed event as a
new delivery on the webhook queue; the worker POSTs it; the receiver gets it once, under a new
delivery id; the failed delivery stays as history, and a second redeliver finds nothing to send.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserq.store import Store
from tests.conftest import REPO, TEST_SECRET_KEY, producer_env
from tests.support.cli_zygote import browserq_command
from tests.support.http import html_pages, serve_http
from tests.support.polling import wait_until
from tests.support.postgres import create_database, drop_database, scratch_name
from tests.support.processes import stop
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

SECRET = "whsec-redeliver-" + uuid.uuid4().hex
ATTEMPTS = 2
TEMPLATE = """
params:
  base_url: {type: url, required: true}
settings: {trace: off, run_retries: 0, timeout_s: 30}
steps:
  - {action: navigate, url: "${base_url}/page"}
  - {id: text, action: get, selector: "#content", into: text}
"""


@pytest.fixture
def own_db() -> Iterator[str]:
    """A database of its own: ``--failed-since`` sends every run's failed events, other tests' too."""
    name = scratch_name("browserq_redeliver")
    yield create_database(name)
    drop_database(name)


@pytest.fixture
def fleet(tmp_path: Path, own_db: str) -> Iterator[tuple[dict[str, str], str, Store]]:
    pg_url = own_db
    queue = f"bq_redeliver_{uuid.uuid4().hex[:8]}"
    env = browserq_env(worker_settings(
        broker_url=redis_url(BROKER_DB), database_url=pg_url, templates_dir=write_templates(
            tmp_path / "templates", {"hooked": TEMPLATE}),
        artifacts_dir=tmp_path / "artifacts", queue=queue, secret_key=TEST_SECRET_KEY,
    ))
    env.update(ALLOW_LOOPBACK_ENV, BROWSERQ_WEBHOOK_SECRET=SECRET, BROWSERQ_WEBHOOK_MAX_ATTEMPTS=str(ATTEMPTS))
    log = tmp_path / "worker.log"
    with serve_http(html_pages({"/page": "<p id='content'>hello</p>"})) as host:
        proc = spawn_worker(browserq_worker_argv(queue), env, log)
        store = Store(pg_url)
        try:
            wait_for_log(proc, log, lambda text: "ready." in text and "runtime started" in text, 120,
                         "the worker to warm its browser")
            with producer_env(env):
                yield env, f"http://{host}", store
        finally:
            stop(proc, 60, group=True)
            store.dispose()


def redeliver(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **env, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    done = browserq_command(["webhooks", "redeliver", *args], env=environ, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def given_up(store: Store, run_id: str) -> list[Any]:
    return wait_until(lambda: [d for d in store.webhooks.webhook_deliveries(run_id) if d.status == "failed"], 90,
                      f"the event of {run_id} to be given up after {ATTEMPTS} attempts")


def test_failed_events_are_sent_again_as_new_deliveries(fleet: tuple[dict[str, str], str, Store]) -> None:
    from browserq import run_template

    env, site, store = fleet
    with webhook_receiver(SECRET, answers=[503] * (2 * ATTEMPTS)) as receiver:  # down for both runs' retries
        runs = [run_template.delay("hooked", params={"base_url": site}, notify=receiver.url) for _ in range(2)]
        assert [r.get(timeout=90)["status"] for r in runs] == ["completed", "completed"]
        failed = {r.id: given_up(store, r.id) for r in runs}
        assert len(receiver.verified("completed")) == 2 * ATTEMPTS  # every POST got the 503
        # the receiver is up now (answers ran out: 200)
        first = redeliver(env, runs[0].id)
        print("redeliver RUN:", first.stdout.strip().splitlines()[-1])
        delivered = wait_until(lambda: _delivered(receiver, 1), 60, "the redelivered event")
        rest = redeliver(env, "--failed-since", "10m", "--json")
        rows = json.loads(rest.stdout)
        print("redeliver --failed-since 10m --json:", rows)
        assert [row["run_id"] for row in rows] == [runs[1].id]  # the first run's event is delivered now
        delivered = wait_until(lambda: _delivered(receiver, 2), 60, "the second redelivered event")
        again = redeliver(env, "--failed-since", "10m")
        print("redeliver again:", again.stdout.strip())
        assert "0 event(s)" in again.stdout
    ids = [int(r.headers["X-Browserq-Delivery"]) for r in delivered]
    olds = {d.id for ds in failed.values() for d in ds}
    assert len(set(ids)) == 2 and not set(ids) & olds, (ids, olds)  # new delivery ids, once each
    assert sorted(r.data["run_id"] for r in delivered) == sorted(r.id for r in runs)
    for run in runs:
        rows = store.webhooks.webhook_deliveries(run.id)
        assert [(d.status, d.attempts) for d in rows] == [("failed", ATTEMPTS), ("delivered", 1)], rows
        assert rows[1].event_key == rows[0].event_key + ":redelivery:1"
        assert rows[1].payload == rows[0].payload


def _delivered(receiver: Receiver, count: int) -> list[Any] | None:
    """The POSTs answered 200 (after the scripted 503s), once ``count`` of them arrived."""
    with receiver.lock:
        ok = [r for r in receiver.got[2 * ATTEMPTS:] if r.verified]
    return ok if len(ok) >= count else None
