"""The same path through RabbitMQ: producer and worker in their own processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from browserq.store import Store
from tests.e2e.conftest import AMQP_URL, celery_worker, run_producer, worker_env

pytestmark = pytest.mark.slow


def test_rabbitmq_end_to_end(tmp_path: Path, pg_url: str, e2e_templates: Path, demo) -> None:
    config = worker_env(tmp_path, pg_url, AMQP_URL, e2e_templates)
    code = (
        "import json, sys\n"
        "from browserq import run_template\n"
        f"r1 = run_template.delay('quotes@1', params={{'start_url': '{demo.url}/quotes/', 'max_pages': 2}})\n"
        "r2 = run_template.apply_async(args=['login_form'], kwargs={'params': {"
        f"'base_url': '{demo.url}', 'password': 's3cret-pass', 'name': 'Grace'}}}})\n"
        "print(json.dumps([r1.get(timeout=120), r2.get(timeout=120)]))\n"
    )
    with celery_worker(config, concurrency=1):
        done = run_producer(config, code)
    assert done.returncode == 0, done.stderr[-3000:]
    quotes, login = json.loads(done.stdout.strip().splitlines()[-1])
    assert quotes["status"] == "completed" and len(quotes["outputs"]["quotes"]) == 20
    assert login["status"] == "completed" and "Thanks, Grace!" in login["outputs"]["confirmation"]
    store = Store(pg_url)
    try:
        for value in (quotes, login):
            run = store.runs.get_run(value["run_id"])
            assert run.status == "completed" and run.queue == config.queue and run.worker
    finally:
        store.dispose()
