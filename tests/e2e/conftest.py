"""Real Celery workers in subprocesses, against real Redis / RabbitMQ and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, TEST_SECRET_KEY, producer_env
from tests.support.polling import wait_until
from tests.support.processes import alive, browserq_pids, stop
from tests.support.redis import BROKER_DB, redis_url
from tests.support.templates import write_templates
from tests.support.workers import (
    CELERY,
    browserq_env,
    spawn_logged,
    spawn_worker,
    wait_for_log,
    worker_settings,
)
from tests.support.zygote import ForkedProcess

REDIS_URL = redis_url(BROKER_DB)
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672//"
# What the e2e tests import from here (the plumbing lives in tests/support/).
__all__ = ["WorkerEnv", "alive", "browserq_pids", "celery_worker", "run_producer", "wait_until", "worker_env"]

#: Templates the e2e workers serve besides the bundled ones (name → body; see tests.support.templates).
EXTRA_TEMPLATES = {
    "slow": """
params:
  url: {type: url, required: true}
settings: {timeout_s: 60, step_timeout_s: 60, trace: off}
steps:
  - {action: navigate, url: "${url}"}
""",
    "order": """
params:
  base_url: {type: url, required: true}
  password: {type: secret, required: true}
  ref: {type: string, default: "-"}
settings: {trace: off, step_timeout_s: 10, run_retries: 0, idempotency_key: "order-${base_url}-${ref}"}
steps:
  - {action: navigate, url: "${base_url}/login"}
  - {action: fill, selector: "#username", value: demo}
  - {action: fill, selector: "#password", value: "${password}"}
  - {action: click, selector: "button[type=submit]"}
  - {action: assert, url: "**/account", message: "login failed"}
  - {action: fill, selector: "#name", value: "Batch"}
  - {action: fill, selector: "#message", value: "order ${run.id}"}
  - {id: send, action: click, selector: "#send", side_effect: true}
  - {action: assert, selector: "#confirmation"}
""",
    "storage_write": """
params:
  url: {type: url, required: true}
settings: {allow_eval: true}
steps:
  - {action: navigate, url: "${url}"}
  - action: eval
    expression: >-
      (async () => {
        document.cookie = 'w=1; path=/; max-age=3600';
        localStorage.setItem('w', '1');
        await new Promise((ok) => { const r = indexedDB.open('wdb', 1);
          r.onupgradeneeded = () => r.result.createObjectStore('kv'); r.onsuccess = () => ok(); });
        return true;
      })()
    into: written
""",
    "storage_read": """
params:
  url: {type: url, required: true}
settings: {allow_eval: true}
steps:
  - {action: navigate, url: "${url}"}
  - action: eval
    expression: >-
      (async () => ({cookie: document.cookie, local: localStorage.getItem('w'),
                     dbs: (await indexedDB.databases()).map(d => d.name)}))()
    into: seen
""",
}


@dataclass
class WorkerEnv:
    env: dict[str, str]
    queue: str
    log: Path


@pytest.fixture(scope="session")
def e2e_templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_templates(tmp_path_factory.mktemp("e2e-templates"), EXTRA_TEMPLATES, copy_from=REPO / "templates")


def worker_env(tmp: Path, pg_url: str, broker_url: str, templates: Path) -> WorkerEnv:
    queue = f"bq_test_{uuid.uuid4().hex[:8]}"
    env = browserq_env(worker_settings(
        broker_url=broker_url, database_url=pg_url, templates_dir=templates, artifacts_dir=tmp / "artifacts",
        queue=queue, secret_key=TEST_SECRET_KEY,
    ))
    return WorkerEnv(env=env, queue=queue, log=tmp / f"worker-{queue}.log")


@contextmanager
def celery_worker(config: WorkerEnv, concurrency: int = 1, timeout_s: float = 60,
                  real_process: bool = False) -> Iterator[subprocess.Popen | ForkedProcess]:
    """Start ``celery worker`` (prefork) and wait until it says it is ready; on exit a warm
    shutdown (SIGTERM: finish, close browsers, exit), SIGKILL to its group after 60 s. Forked from
    the workers' zygote (:func:`tests.support.workers.spawn_worker`) unless ``real_process``."""
    spawn = spawn_logged if real_process else spawn_worker
    proc = spawn([
        *CELERY, "worker", "--pool", "prefork", "--concurrency", str(concurrency),
        "-Q", f"{config.queue},{config.queue}.sweep", "-n", f"{config.queue}@%h", "--loglevel", "INFO", "-E",
        "--without-gossip", "--without-mingle",
    ], config.env, config.log)
    try:
        wait_for_log(proc, config.log, lambda text: "ready." in text, timeout_s, "the worker to start")
        yield proc
    finally:
        stop(proc, 60)


def run_producer(config: WorkerEnv, code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run producer code in its own process (a different broker than this test process uses)."""
    return subprocess.run(
        [sys.executable, "-c", code], env=config.env, cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="session")
def redis_config(tmp_path_factory: pytest.TempPathFactory, pg_url: str, e2e_templates: Path) -> Iterator[WorkerEnv]:
    config = worker_env(tmp_path_factory.mktemp("redis-e2e"), pg_url, REDIS_URL, e2e_templates)
    # This test process is the producer: point browserq's settings at the same servers.
    with producer_env(config.env):
        yield config


@pytest.fixture(scope="session")
def redis_worker(redis_config: WorkerEnv) -> Iterator[None]:
    # This worker outlives every test of its pytest process, on the process's one database: were it
    # in the fleet's sweeper election (a lock per database), it would sweep the runs of later tests
    # and win the election that the sweeper's own tests watch (tests/chaos/test_worker_kills.py).
    quiet = WorkerEnv(env={**redis_config.env, "BROWSERQ_SWEEP_IN_WORKERS": "false"},
                      queue=redis_config.queue, log=redis_config.log)
    with celery_worker(quiet, concurrency=1):
        yield
