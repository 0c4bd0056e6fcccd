"""The ``browserq.sweep`` task's work: re-send stuck runs under their own task id (real Redis, SQLite)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import redis

import browserq.celery_app  # noqa: F401  (the app as workers load it)
from browserq.execute import prepare_loaded, record_run
from browserq.store import Store
from browserq.tasks.sweep import sweep_stuck_runs
from tests.conftest import make_settings, producer_env, template


def test_a_sweeper_requeue_counts_as_a_worker_loss(tmp_path: Path) -> None:
    """Whether Celery's redelivery (a takeover) or the sweeper (a requeue) gets to a dead worker's
    run first, the poison limit (max_worker_losses) counts the loss, and the re-sent message
    carries the run's own task id."""
    settings = make_settings(tmp_path)
    store = Store(settings.database_url)
    store.schema.upgrade()
    queue = f"bq_sweep_test_{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    # The re-send goes through the producer app: its result backend is the test's store, not the
    # default one (./browserq.db in the working directory, the repository).
    with producer_env({"BROWSERQ_DATABASE_URL": settings.database_url,
                       "BROWSERQ_BROKER_URL": "redis://127.0.0.1:6379/0"}):
        try:
            prepared = prepare_loaded(template("steps:\n  - {action: navigate, url: 'http://127.0.0.1:9/'}\n"), {})
            record_run(store, prepared, secret_box=None, task_id="task-of-the-run", queue=queue)
            store.leases.acquire_lease(prepared.run_id, owner="elsewhere:1:1", ttl_s=0.01)
            time.sleep(0.05)  # the lease has expired: its worker is presumed dead
            assert sweep_stuck_runs(store, settings) == 1
            run = store.runs.get_run(prepared.run_id)
            assert (run.status, run.takeovers) == ("queued", 1)
            (message,) = client.lrange(queue, 0, -1)
            assert b'"id": "task-of-the-run"' in message
            soft = run.timeout_s + settings.run_time_limit_margin_s
            assert json.loads(message)["headers"]["timelimit"] == [soft + 30, soft]  # the producer's limits
        finally:
            client.delete(queue)
            store.dispose()
