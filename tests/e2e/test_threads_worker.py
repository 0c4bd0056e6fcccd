"""``browserq worker --pool threads --concurrency 3``: one process, one Chromium, three runs at once,
each in a context of its own; a browser crash under K runs in flight is one relaunch and every run
completes; no browser is left behind at shutdown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.conftest import REPO
from tests.e2e.conftest import REDIS_URL, WorkerEnv, run_producer, worker_env
from tests.support.processes import alive, browser_roots, browserq_pids, descendants, stop
from tests.support.templates import write_templates
from tests.support.workers import spawn_worker, wait_for_log

pytestmark = pytest.mark.slow

#: Reads the cookie jar, sets a cookie only this run knows, waits (so that runs overlap), reads again:
#: a context shared with another run would show that run's cookie in ``before`` or ``after``.
SLOT_TEMPLATE = """
params:
  url: {type: url, required: true}
settings: {allow_eval: true, trace: off, run_retries: 0}
steps:
  - {action: navigate, url: "${url}"}
  - action: eval
    expression: >-
      (async () => {
        const before = document.cookie;
        const mark = Math.random().toString(36).slice(2);
        document.cookie = 'slot=' + mark + '; path=/';
        const start = Date.now();
        await new Promise((ok) => setTimeout(ok, 1500));
        return {before, mark, after: document.cookie, start, end: Date.now()};
      })()
    into: seen
"""
#: Long enough in flight for the browser to be killed under all K runs.
SLOW_TEMPLATE = """
params:
  url: {type: url, required: true}
settings: {allow_eval: true, trace: off}
steps:
  - {action: navigate, url: "${url}"}
  - {action: eval, expression: "new Promise((ok) => setTimeout(() => ok(1), 12000))", into: waited}
  - {action: get, what: title, into: title}
"""
RUNS = 6
CONCURRENCY = 3


@pytest.fixture
def threads_config(tmp_path: Path, pg_url: str) -> WorkerEnv:
    # Names of their own: the session's database already holds other tests' "slow" template, and a
    # used name@version never takes another body.
    templates = write_templates(tmp_path / "templates", {"k_slot": SLOT_TEMPLATE, "k_slow": SLOW_TEMPLATE})
    config = worker_env(tmp_path, pg_url, REDIS_URL, templates)
    config.env["BROWSERQ_RESULT_BACKEND"] = REDIS_URL
    return config


@pytest.fixture
def threads_config_pg(threads_config: WorkerEnv, pg_url: str) -> tuple[WorkerEnv, str]:
    return threads_config, pg_url


@pytest.fixture
def threads_worker(threads_config: WorkerEnv) -> Iterator[subprocess.Popen]:
    config = threads_config
    proc = spawn_worker(
        [sys.executable, "-m", "browserq.cli", "worker", "-c", str(CONCURRENCY), "--pool", "threads",
         "-n", f"{config.queue}@%h", "--without-gossip", "--without-mingle"],
        config.env, config.log,
    )
    try:
        wait_for_log(proc, config.log, lambda text: "ready." in text and "runtime started" in text, 120,
                     "the threads worker to start its browser")
        yield proc
    finally:
        stop(proc, 60, group=True)


def test_threads_worker_runs_k_runs_at_once_in_contexts_of_one_browser(threads_config, threads_worker, demo) -> None:
    proc = threads_worker
    code = (
        "import json\n"
        "from browserq import run_template\n"
        f"results = [run_template.delay('k_slot', params={{'url': '{demo.url}/quotes/'}}) for _ in range({RUNS})]\n"
        "print(json.dumps([r.get(timeout=240) for r in results]))\n"
    )
    done = run_producer(threads_config, code, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:] + threads_config.log.read_text()[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert [r["status"] for r in results] == ["completed"] * RUNS, results
    seen = [r["outputs"]["seen"] for r in results]
    for one in seen:  # each run saw only its own cookie: a context of its own
        assert one["before"] == "" and one["after"] == f"slot={one['mark']}", seen
    assert len({one["mark"] for one in seen}) == RUNS
    overlapping = sum(
        1 for i, a in enumerate(seen) for b in seen[i + 1:] if a["start"] < b["end"] and b["start"] < a["end"]
    )
    assert overlapping >= 1, f"the runs never ran at the same time: {seen}"

    below = descendants(proc.pid)
    assert len(browser_roots(below)) == 1, "one Chromium for the K runs of the process"
    log = threads_config.log.read_text()
    assert log.count("runtime started") == 1 and log.count("browser launched") == 1, log[-3000:]

    ours = {pid for pid in below if pid in browserq_pids()}
    stop(proc, 60, group=False)  # a warm shutdown (SIGTERM to the worker only) closes its browser
    assert not alive(ours), "the threads worker left Chromium or its driver behind"


def running(pg_url: str) -> int:
    return _count(pg_url, "select count(*) from runs where template_name = 'k_slow' and status = 'running'")


def in_their_wait(pg_url: str) -> int:
    """Runs whose 12 s eval step has started (the journal writes a start within its flush_ms)."""
    return _count(pg_url, "select count(distinct s.run_id) from step_attempts s join runs r on r.id = s.run_id"
                          " where r.template_name = 'k_slow' and r.status = 'running'"
                          " and s.action = 'eval' and s.status = 'started'")


def _count(pg_url: str, query: str) -> int:
    engine = sa.create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1)
                              if pg_url.startswith("postgresql://") else pg_url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(query)).scalar() or 0
    finally:
        engine.dispose()


def test_a_browser_crash_under_k_runs_in_flight_is_one_relaunch_and_every_run_completes(
    threads_config_pg, threads_worker, demo
) -> None:
    config, pg_url = threads_config_pg
    proc = threads_worker
    code = (
        "import json\n"
        "from browserq import run_template\n"
        f"results = [run_template.delay('k_slow', params={{'url': '{demo.url}/quotes/'}}) for _ in range({CONCURRENCY})]\n"
        "print(json.dumps([r.get(timeout=240) for r in results]))\n"
    )
    producer = subprocess.Popen([sys.executable, "-c", code], env=config.env, cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while in_their_wait(pg_url) < CONCURRENCY:  # all K inside their 12 s eval at once
            if producer.poll() is not None:
                raise AssertionError(f"the producer ended before the K runs ran together: {producer.communicate()}"
                                     + config.log.read_text()[-3000:])
            assert time.monotonic() < deadline, (
                f"the K runs never ran together ({running(pg_url)} running, {in_their_wait(pg_url)} in their wait)")
            time.sleep(0.2)
        (root,) = browser_roots(descendants(proc.pid))
        os.kill(root, signal.SIGKILL)
        out, err = producer.communicate(timeout=280)
    finally:
        if producer.poll() is None:
            producer.kill()
    assert producer.returncode == 0, err[-3000:] + config.log.read_text()[-3000:]
    results = json.loads(out.strip().splitlines()[-1])
    assert [r["status"] for r in results] == ["completed"] * CONCURRENCY, results
    log = config.log.read_text()
    assert log.count("browser launched") == 2, "one relaunch for the K runs, not one per run"
    roots = browser_roots(descendants(proc.pid))
    assert len(roots) == 1 and root not in roots
