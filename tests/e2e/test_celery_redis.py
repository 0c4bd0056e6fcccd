"""``run_template.delay`` → Redis → a real prefork worker with Chromium → records in PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa

from browserq.errors import ParamError, RunFailed, TemplateInvalid, TemplateNotFound
from tests.e2e.conftest import REDIS_URL, WorkerEnv, celery_worker, run_producer, worker_env
from tests.support.polling import wait_until
from tests.support.processes import (
    DRIVER_MARKER,
    alive,
    browser_roots,
    browserq_pids,
    cmdline,
    descends_from,
    parent_of,
)

pytestmark = pytest.mark.slow


def run_count(pg_url: str) -> int:
    """The runs recorded in ``pg_url`` (its schema made first: the test may be the first of its
    pytest process to touch that database, before any worker or runtime migrated it)."""
    from browserq.store import Store

    store = Store(pg_url)
    try:
        store.schema.upgrade()
    finally:
        store.dispose()
    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text("select count(*) from runs")).scalar_one()
    finally:
        engine.dispose()


def test_delay_runs_a_paginated_scrape(redis_worker, site, pg_url: str) -> None:
    from browserq import run_template
    from browserq.store import Store

    result = run_template.delay("quotes@1.2", params={"start_url": f"{site.url}/quotes/"})
    value = result.get(timeout=120)
    assert value["status"] == "completed", value
    assert value["run_id"] == result.id
    assert len(value["outputs"]["quotes"]) == 50
    json.dumps(value)  # JSON-serializable
    store = Store(pg_url)
    run = store.runs.get_run(result.id)
    assert run.status == "completed" and run.attempt == 1 and run.worker and run.task_id == result.id
    assert run.template_name == "quotes" and run.template_version == "1.2.0"
    assert len(store.steps.steps(result.id)) >= 11
    store.dispose()


def test_apply_async_with_secret_keeps_it_out_of_broker_and_database(redis_config, redis_worker, demo, pg_url) -> None:
    from browserq import run_template

    password = "s3cret-pass"
    params = {"base_url": demo.url, "password": password, "name": "Ada", "email": "ada@example.org"}
    # Inspect the message itself first: send to a queue nobody consumes.
    inspect_queue = redis_config.queue + "_inspect"
    parked = run_template.apply_async(args=["login_form"], kwargs={"params": params}, queue=inspect_queue)
    client = redis.Redis.from_url(REDIS_URL)
    messages = client.lrange(inspect_queue, 0, -1)
    assert messages and all(password.encode() not in m for m in messages)
    assert any(parked.id.encode() in m for m in messages)
    client.delete(inspect_queue)

    result = run_template.apply_async(args=["login_form"], kwargs={"params": params})
    value = result.get(timeout=120)
    assert value["status"] == "completed", value
    assert "Thanks, Ada!" in value["outputs"]["confirmation"]
    assert demo.submissions and demo.submissions[-1]["name"] == "Ada"
    engine = sa.create_engine(pg_url)
    with engine.connect() as conn:
        # Every row of these two runs (the database is shared by this process's tests: another test
        # may rightly type the demo's password in clear, e.g. a session that was not told it is one).
        ids = {"ids": [parked.id, result.id]}
        for table, key in (("runs", "id"), ("step_attempts", "run_id"), ("artifacts", "run_id"),
                           ("run_transitions", "run_id"), ("celery_taskmeta", "task_id")):
            rows = conn.execute(sa.text(f"select * from {table} where {key} = any(:ids)"), ids).fetchall()
            assert password not in repr(rows), table
        assert password not in repr(conn.execute(sa.text("select * from templates")).fetchall())
        run = conn.execute(sa.text("select params, secrets from runs where id = :id"), {"id": result.id}).one()
    engine.dispose()
    assert run.params["password"] == "[secret:password]"
    assert run.secrets and password not in run.secrets  # stored encrypted for the worker


def test_producer_rejects_bad_input_before_enqueueing(redis_config, pg_url: str) -> None:
    from browserq import run_template

    client = redis.Redis.from_url(REDIS_URL)
    before_runs, before_len = run_count(pg_url), client.llen(redis_config.queue)
    with pytest.raises(TemplateNotFound, match="no template named 'nope'"):
        run_template.delay("nope", params={})
    with pytest.raises(TemplateNotFound, match=r"1\.9"):
        run_template.delay("quotes@1.9", params={})
    with pytest.raises(ParamError, match="start_url") as missing:
        run_template.delay("quotes", params={})
    assert "required" in str(missing.value)
    with pytest.raises(ParamError, match="max_pages"):
        run_template.delay("quotes", params={"start_url": "http://127.0.0.1/", "max_pages": "many"})
    with pytest.raises(ParamError, match="max_pages"):
        run_template.delay("quotes", params={"start_url": "http://127.0.0.1/", "max_pages": 500})
    with pytest.raises(ParamError, match="start_url"):
        run_template.delay("quotes", params={"start_url": "file:///etc/passwd"})
    with pytest.raises(ParamError, match="surprise"):
        run_template.delay("quotes", params={"start_url": "http://127.0.0.1/", "surprise": 1})
    with pytest.raises(TypeError, match="unexpected"):
        run_template.apply_async(args=["quotes", {}, "extra"])
    assert run_count(pg_url) == before_runs
    assert client.llen(redis_config.queue) == before_len


def test_broken_template_file_is_reported_at_the_producer(redis_config, e2e_templates: Path) -> None:
    from browserq import run_template

    broken = e2e_templates / "broken.yaml"
    broken.write_text("name: broken\nversion: 1.0.0\nsteps:\n  - action: clik\n    selector: a\n")
    try:
        with pytest.raises(TemplateInvalid, match="unknown action 'clik'"):
            run_template.delay("broken")
    finally:
        broken.unlink()


def test_broker_down_says_so(redis_config) -> None:
    config = WorkerEnv(env={**redis_config.env, "BROWSERQ_BROKER_URL": "redis://127.0.0.1:1/0"},
                       queue=redis_config.queue, log=redis_config.log)
    done = run_producer(
        config,
        "from browserq import run_template\n"
        "import sys\n"
        "try:\n"
        "    run_template.delay('quotes', params={'start_url': 'http://127.0.0.1:9/'})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc); sys.exit(3)\n",
    )
    assert done.returncode == 3, done.stderr
    assert "BrokerUnavailable" in done.stdout and "redis://127.0.0.1:1/0" in done.stdout
    assert "Is the broker running?" in done.stdout


def test_two_runs_on_one_worker_are_isolated(redis_worker, demo) -> None:
    from browserq import run_template

    url = f"{demo.url}/storage"
    first = run_template.delay("storage_write", params={"url": url}).get(timeout=60)
    assert first["status"] == "completed" and first["outputs"]["written"] is True
    second = run_template.delay("storage_read", params={"url": url}).get(timeout=60)
    seen = second["outputs"]["seen"]
    assert "w=1" not in seen["cookie"] and seen["local"] is None and "wdb" not in seen["dbs"]


def test_clean_shutdown_leaves_no_browser_processes(tmp_path, pg_url, e2e_templates, site) -> None:
    config = worker_env(tmp_path, pg_url, REDIS_URL, e2e_templates)
    before = browserq_pids()
    with celery_worker(config, concurrency=2, real_process=True) as proc:  # its command line is looked at
        # Two children, each with its own driver and Chromium (launched after the fork).
        mine = lambda: {p for p in browserq_pids() - before if descends_from(p, proc.pid)}  # noqa: E731

        def one_browser_and_driver_per_child() -> tuple[set[int], list[int], list[int]] | None:
            # One consistent look at the tree: a Chromium that is being launched (or a helper
            # between fork and exec) may show up in one look and be gone in the next.
            started = mine()
            roots = browser_roots(started)
            drivers = [p for p in started if DRIVER_MARKER in cmdline(p)]
            children = {parent_of(p) for p in drivers}
            if len(roots) == 2 and len(drivers) == 2 and len(children) == 2:
                return started, roots, drivers
            return None

        started, roots, drivers = wait_until(
            one_browser_and_driver_per_child, 90,
            "two children, each with its own driver and Chromium (launched after the fork)")
        assert b"celery" in cmdline(proc.pid)
        assert all(parent_of(p) not in (proc.pid, None) for p in drivers)  # started in children only
        assert all(any(descends_from(root, driver) for driver in drivers) for root in roots), roots
    assert proc.returncode == 0, proc.returncode
    left = alive(started)
    assert left == set(), f"orphan Chromium/driver processes after a clean shutdown: {[cmdline(p)[:200] for p in left]}"


def test_message_sent_without_the_producer_is_validated_by_the_worker(redis_config, redis_worker, demo) -> None:
    from browserq.celery_app import TASK_NAME, app

    good = app.send_task(TASK_NAME, args=["quotes"], kwargs={"params": {"start_url": f"{demo.url}/quotes/",
                                                                          "max_pages": 1}},
                         queue=redis_config.queue)
    value = good.get(timeout=60)
    assert value["status"] == "completed" and len(value["outputs"]["quotes"]) == 10
    bad = app.send_task(TASK_NAME, args=["quotes"], kwargs={"params": {"max_pages": 0}}, queue=redis_config.queue)
    with pytest.raises(RunFailed) as failed:
        bad.get(timeout=60)
    value = failed.value.result
    assert value["status"] == "failed" and value["error"]["code"] == "PARAM_INVALID"
    assert "start_url" in value["error"]["message"]
    assert bad.state == "FAILURE"


def test_soft_time_limit_records_the_run_and_frees_the_worker(redis_worker, demo, pg_url) -> None:
    from browserq import RunFailed, run_template
    from browserq.store import Store

    hung = run_template.apply_async(args=["slow"], kwargs={"params": {"url": f"{demo.url}/slow?ms=30000"}},
                                    soft_time_limit=2, time_limit=20)
    # The soft limit is recorded as the run's end, and the task reports that run (FAILURE).
    with pytest.raises(RunFailed) as raised:
        hung.get(timeout=60)
    assert raised.value.code == "RUN_TIMEOUT" and raised.value.run_id == hung.id
    store = Store(pg_url)
    try:
        run = store.runs.get_run(hung.id)
        assert run.status == "failed" and run.error_code == "RUN_TIMEOUT"
        assert all(s.status != "started" for s in store.steps.steps(hung.id))
    finally:
        store.dispose()
    after = run_template.delay("quotes", params={"start_url": f"{demo.url}/quotes/", "max_pages": 1})
    assert after.get(timeout=60)["status"] == "completed"
