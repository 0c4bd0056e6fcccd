"""Real Celery workers in subprocesses, against real Redis / RabbitMQ and PostgreSQL."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, TEST_SECRET_KEY, producer_env

REDIS_URL = "redis://127.0.0.1:6379/0"
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672//"

EXTRA_TEMPLATES = {
    "slow.yaml": """
name: slow
version: 1.0.0
params:
  url: {type: url, required: true}
settings: {timeout_s: 60, step_timeout_s: 60, trace: off}
steps:
  - {action: navigate, url: "${url}"}
""",
    "order.yaml": """
name: order
version: 1.0.0
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
    "storage_write.yaml": """
name: storage_write
version: 1.0.0
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
    "storage_read.yaml": """
name: storage_read
version: 1.0.0
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


def browserq_pids() -> set[int]:
    """Chromium processes launched by any browserq runtime, plus Playwright driver processes."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"--browserq-instance=" in cmdline or b"playwright/driver" in cmdline:
            pids.add(int(entry.name))
    return pids


def alive(pids: set[int]) -> set[int]:
    still = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            still.add(pid)
    return still


@pytest.fixture(scope="session")
def e2e_templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("e2e-templates")
    for path in (REPO / "templates").glob("*.yaml"):
        shutil.copy(path, directory / path.name)
    for name, body in EXTRA_TEMPLATES.items():
        (directory / name).write_text(body.lstrip())
    return directory


def worker_env(tmp: Path, pg_url: str, broker_url: str, templates: Path) -> WorkerEnv:
    queue = f"bq_test_{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERQ_")}
    env.update(
        {
            "BROWSERQ_BROKER_URL": broker_url,
            "BROWSERQ_RESULT_BACKEND": f"db+{pg_url}",
            "BROWSERQ_DATABASE_URL": pg_url,
            "BROWSERQ_TEMPLATES_DIR": str(templates),
            "BROWSERQ_ARTIFACTS_DIR": str(tmp / "artifacts"),
            "BROWSERQ_QUEUE": queue,
            "BROWSERQ_SECRET_KEY": TEST_SECRET_KEY,
            "BROWSERQ_STEP_RETRY_DELAY_S": "0.05",
            "PYTHONPATH": str(REPO),
        }
    )
    return WorkerEnv(env=env, queue=queue, log=tmp / f"worker-{queue}.log")


@contextmanager
def celery_worker(config: WorkerEnv, concurrency: int = 1, timeout_s: float = 60) -> Iterator[subprocess.Popen]:
    """Start ``celery worker`` (prefork) and wait until it says it is ready."""
    log = config.log.open("ab")
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "celery", "-A", "browserq.celery_app:app", "worker",
            "--pool", "prefork", "--concurrency", str(concurrency), "-Q", f"{config.queue},{config.queue}.sweep",
            "-n", f"{config.queue}@%h", "--loglevel", "INFO", "-E",
            "--without-gossip", "--without-mingle",
        ],
        env=config.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while "ready." not in config.log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"worker did not start:\n{config.log.read_text(errors='replace')[-4000:]}")
            time.sleep(0.2)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # warm shutdown: finish, close browsers, exit
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        log.close()


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
    with celery_worker(redis_config, concurrency=1):
        yield


def wait_until(predicate, timeout_s: float = 60, interval_s: float = 0.1):
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(interval_s)
