"""A real prefork worker (2 children) and a real ``--pool threads`` worker with
``BROWSERQ_METRICS_PORT`` and ``BROWSERQ_READY_FILE``: runs sent with ``.delay()``, the port
scraped over HTTP and parsed with prometheus_client's parser, the counts compared with what ran;
the ready file appears once the browsers are warm and is gone after shutdown."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import producer_env
from tests.e2e.conftest import REDIS_URL, WorkerEnv, celery_worker, worker_env
from tests.metrics.scrape import Samples, get, scrape
from tests.support.http import free_port
from tests.support.polling import wait_until
from tests.support.processes import descendants, parent_of, signal_pid, stop
from tests.support.templates import write_templates
from tests.support.workers import spawn_logged, wait_for_log

pytestmark = pytest.mark.slow

OK = """
params:
  url: {type: url, required: true}
settings: {trace: off, run_retries: 0}
steps:
  - {action: navigate, url: "${url}"}
  - {action: get, what: title, into: title}
"""
#: One retry in place of the click (attempt 2), then the run fails SELECTOR_NOT_FOUND for good.
FAIL = """
params:
  url: {type: url, required: true}
settings: {trace: off, run_retries: 0, step_retries: 1}
steps:
  - {action: navigate, url: "${url}"}
  - {action: click, selector: "#nothing-like-this", timeout_s: 0.5}
"""


def metrics_env(tmp: Path, pg_url: str, **extra: str) -> tuple[WorkerEnv, int]:
    templates = write_templates(tmp / "templates", {"metrics_ok": OK, "metrics_fail": FAIL})
    config = worker_env(tmp, pg_url, REDIS_URL, templates)
    port = free_port()
    config.env.update({"BROWSERQ_METRICS_PORT": str(port), "BROWSERQ_READY_FILE": str(tmp / "ready"), **extra})
    return config, port


@contextmanager
def as_producer(config: WorkerEnv) -> Iterator[None]:
    with producer_env(config.env):
        yield


def run_some(url: str) -> list[dict]:
    """Two completed runs and one failed run, in this process (the producer)."""
    from browserq import run_template

    handles = [run_template.delay(name, params={"url": f"{url}/quotes/"})
               for name in ("metrics_ok", "metrics_ok", "metrics_fail")]
    outcomes = [h.get(timeout=180, propagate=False) for h in handles]
    return [getattr(o, "result", o) for o in outcomes]


def check_run_and_step_counts(samples: Samples) -> None:
    assert samples.get("browserq_runs_finished_total", template="metrics_ok", status="completed", code="") == 2
    assert samples.get("browserq_runs_finished_total", template="metrics_fail", status="failed",
                       code="SELECTOR_NOT_FOUND") == 1
    assert samples.total("browserq_runs_finished_total") == 3
    assert samples.get("browserq_run_duration_seconds_count", template="metrics_ok", status="completed") == 2
    assert samples.total("browserq_runs_in_progress") == 0
    steps = "browserq_step_duration_seconds_count"
    assert samples.get(steps, action="navigate", status="succeeded") == 3
    assert samples.get(steps, action="get", status="succeeded") == 2
    assert samples.get(steps, action="click", status="failed") == 2  # the attempt and its retry
    assert samples.get("browserq_steps_retried_total", action="click") == 1
    assert samples.total("browserq_steps_retried_total") == 1


def test_a_prefork_worker_serves_what_its_children_did(tmp_path: Path, pg_url: str, site) -> None:
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    (metrics_dir / "counter_1.db").write_bytes(b"a previous worker's file")  # wiped at start
    config, port = metrics_env(tmp_path, pg_url, BROWSERQ_METRICS_DIR=str(metrics_dir))
    ready = tmp_path / "ready"
    with celery_worker(config, concurrency=2, timeout_s=120) as proc:
        wait_until(lambda: ready.exists() and ready.read_text() == "2\n", 120, "both children warm")
        status, body = get(port, "/ready")
        assert status == 200 and "ready: 2 of 2 worker processes have a warm browser" in body
        assert not (metrics_dir / "counter_1.db").exists()

        with as_producer(config):
            results = run_some(site.url)
        assert [r["status"] for r in results] == ["completed", "completed", "failed"], results

        samples = scrape(port)
        check_run_and_step_counts(samples)
        assert samples.get("browserq_browser_launches_total", kind="start") == 2  # one per child
        assert samples.total("browserq_browser_recycles_total") == 0
        assert samples.get("browserq_worker_processes_warm") == 2
        assert samples.get("browserq_broker_up") == 1
        assert samples.get("browserq_queue_depth", queue=config.queue) is not None
        assert samples.get("browserq_queue_depth", queue=f"{config.queue}.sweep") is not None
        # the spares come back after the last run's context closed: one per child (prewarm 1)
        settled = wait_until(lambda: (s := scrape(port)).get("browserq_browser_contexts", state="spare") == 2 and s,
                             60, "one spare context per child")
        assert settled.get("browserq_browser_contexts", state="in_use") == 0
        assert len(list(metrics_dir.glob("counter_*.db"))) == 2  # each child records into its own

        stop(proc, 60)
        assert not ready.exists(), "the ready file outlived the worker"
        assert not list(tmp_path.glob("ready.*")), "a process's ready marker outlived the worker"


@pytest.mark.full_chromium  # breaks BROWSERQ_CHROMIUM_PATH, the chromium engine's
def test_a_worker_without_a_browser_is_not_ready(tmp_path: Path, pg_url: str) -> None:
    config, port = metrics_env(tmp_path, pg_url, BROWSERQ_CHROMIUM_PATH=str(tmp_path / "no-chromium"))
    ready = tmp_path / "ready"
    ready.write_text("left by a worker that was killed\n")
    with celery_worker(config, concurrency=1, timeout_s=120):
        wait_until(lambda: "browser did not start" in config.log.read_text(), 60, "the child to give up")
        assert not ready.exists(), "a stale ready file said ready while no browser was warm"
        status, body = get(port, "/ready")
        assert status == 503 and "not ready: 0 of 1" in body
        assert scrape(port).get("browserq_worker_processes_warm") == 0


def test_a_threads_worker_serves_its_metrics_and_readiness_too(tmp_path: Path, pg_url: str, site) -> None:
    config, port = metrics_env(tmp_path, pg_url)
    ready = tmp_path / "ready"
    proc = spawn_logged(
        [sys.executable, "-m", "browserq.cli", "worker", "-c", "2", "--pool", "threads",
         "-n", f"{config.queue}@%h", "--without-gossip", "--without-mingle"],
        config.env, config.log,
    )
    try:
        wait_for_log(proc, config.log, lambda text: "ready." in text and "metrics served" in text, 120,
                     "the threads worker to serve metrics")
        wait_until(ready.exists, 120, "the threads worker's browser to be warm")
        status, body = get(port, "/ready")
        assert status == 200 and "1 of 1" in body
        found = re.search(r"directory=(\S+)", config.log.read_text())
        assert found, config.log.read_text()[-3000:]
        directory = Path(found.group(1))
        assert directory.is_dir() and directory.name.startswith("browserq-metrics-")

        with as_producer(config):
            results = run_some(site.url)
        assert [r["status"] for r in results] == ["completed", "completed", "failed"], results
        samples = scrape(port)
        check_run_and_step_counts(samples)
        assert samples.get("browserq_browser_launches_total", kind="start") == 1  # one process, one browser
        assert samples.get("browserq_browser_contexts", state="in_use") == 0
        stop(proc, 60)  # a warm shutdown of the worker process
    finally:
        stop(proc, 10, group=True)
    assert not ready.exists() and not directory.exists(), "the worker left its ready file or metrics dir"


def worker_children(parent: int) -> set[int]:
    return {pid for pid, command in descendants(parent).items()
            if parent_of(pid) == parent and b"celery" in command}


def warm_successor(parent: int, killed: int, tmp: Path) -> int | None:
    """A child of ``parent`` other than ``killed`` whose ready marker is there."""
    return next((pid for pid in worker_children(parent) - {killed} if (tmp / f"ready.{pid}").exists()), None)


def test_a_killed_child_leaves_the_sums_and_its_successor_does_not_hold_the_port(
    tmp_path: Path, pg_url: str
) -> None:
    """The pool forks a successor after the server started: it closes the listening socket it
    inherits (only the parent answers; the port is free once the parent exits), and the killed
    child's gauges, which no shutdown signal removed, are dropped at the next scrape."""
    config, port = metrics_env(tmp_path, pg_url)
    with celery_worker(config, concurrency=1, timeout_s=120, real_process=True) as proc:  # children by command line
        wait_until((tmp_path / "ready").exists, 120, "the child to be warm")
        wait_until(lambda: scrape(port).get("browserq_browser_contexts", state="spare") == 1, 60, "its spare")
        (first,) = worker_children(proc.pid)
        signal_pid(first)
        successor = wait_until(lambda: warm_successor(proc.pid, first, tmp_path), 120, "a warm successor")
        samples = wait_until(lambda: (s := scrape(port)).get("browserq_browser_contexts", state="spare") == 1
                             and s.get("browserq_browser_launches_total", kind="start") == 2 and s,
                             60, "the successor's spare alone, both launches counted")
        assert samples.get("browserq_worker_processes_warm") == 1
        listeners = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True).stdout
        holders = {int(p) for p in re.findall(r"pid=(\d+)", listeners)}
        assert holders == {proc.pid}, (listeners, successor)


#: Another address of this host: what a scraper on another host or container connects to.
FOREIGN = "127.0.0.6"


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=5):
            return True
    except OSError:
        return False


@pytest.mark.parametrize(("host", "from_elsewhere"), [(None, False), ("0.0.0.0", True)], ids=["default", "all"])
def test_metrics_listen_on_loopback_unless_told_otherwise(
    tmp_path: Path, pg_url: str, host: str | None, from_elsewhere: bool
) -> None:
    """By default the port answers on 127.0.0.1 only (an exporter on every interface of every
    worker host is not a default); ``BROWSERQ_METRICS_HOST=0.0.0.0`` opens it to other hosts, as
    the compose file does for its Prometheus."""
    extra = {"BROWSERQ_CHROMIUM_PATH": str(tmp_path / "no-chromium")}  # no browser needed: faster
    if host is not None:
        extra["BROWSERQ_METRICS_HOST"] = host
    config, port = metrics_env(tmp_path, pg_url, **extra)
    with celery_worker(config, concurrency=1, timeout_s=120):
        wait_until(lambda: "metrics served" in config.log.read_text(), 60, "the metrics server")
        assert f"{host or '127.0.0.1'}:{port}" in config.log.read_text()  # the "metrics served" line says where
        assert get(port, "/ready")[0] == 503  # loopback answers either way (no browser: not ready)
        assert _accepts(FOREIGN, port) is from_elsewhere
