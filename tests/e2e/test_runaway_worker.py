"""Through a real prefork worker: a runaway script, a dead driver and a browser that cannot come
back never disable the worker."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import REDIS_URL, celery_worker, run_producer, wait_until, worker_env
from tests.support.processes import descendants, is_browser_root
from tests.support.templates import write_templates

pytestmark = pytest.mark.slow

TEMPLATES = {
    "spin": """
        params:
          url: {type: url, required: true}
        settings: {allow_eval: true, timeout_s: 60, run_retries: 0}
        steps:
          - {action: navigate, url: "${url}"}
          - {action: eval, expression: "(() => { while(true){} })()", timeout_s: 4, retries: 0}
        """,
    "count": """
        params:
          url: {type: url, required: true}
        settings: {trace: off}
        steps:
          - {action: navigate, url: "${url}"}
          - {action: get, what: count, selector: ".quote", into: n}
        """,
}

PRODUCE = """
import json, sys
from browserq import RunFailed, run_template
result = run_template.delay(sys.argv[1], params={"url": sys.argv[2]})
value = result.get(timeout=float(sys.argv[3]), propagate=False)  # a failed run: RunFailed
print(json.dumps(value.result if isinstance(value, RunFailed) else value))
"""


def _templates(tmp: Path) -> Path:
    return write_templates(tmp / "templates", TEMPLATES)


def _produce(config, template: str, url: str, timeout_s: float = 120) -> dict:
    done = run_producer(config, PRODUCE.replace("sys.argv[1]", repr(template)).replace(
        "sys.argv[2]", repr(url)).replace("float(sys.argv[3])", str(timeout_s)), timeout=timeout_s + 60)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _browsers(worker: int) -> set[int]:
    return {
        pid for pid, cmd in descendants(worker).items()
        if is_browser_root(cmd)
    }


def _drivers(worker: int) -> set[int]:
    return {pid for pid, cmd in descendants(worker).items() if b"playwright/driver" in cmd and b"node" in cmd}


def _children(worker: int) -> set[int]:
    return {pid for pid, cmd in descendants(worker).items() if b"celery" in cmd}


def test_runaway_eval_and_a_killed_driver_through_a_celery_worker(tmp_path: Path, pg_url: str, site) -> None:
    config = worker_env(tmp_path, pg_url, REDIS_URL, _templates(tmp_path))
    url = f"{site.url}/quotes/"
    with celery_worker(config, concurrency=1) as worker:
        assert _produce(config, "count", url)["status"] == "completed"
        (browser,) = wait_until(lambda: _browsers(worker.pid))
        value = _produce(config, "spin", url)
        assert value["status"] == "failed" and value["error"]["code"] == "TIMEOUT", value
        assert _browsers(worker.pid) == {browser}  # the same Chromium serves the next run
        value = _produce(config, "count", url)
        assert value["status"] == "completed" and value["outputs"]["n"] == 10, value
        assert _browsers(worker.pid) == {browser}

        (driver,) = _drivers(worker.pid)
        os.kill(driver, signal.SIGKILL)
        value = _produce(config, "count", url)
        assert value["status"] == "completed" and value["outputs"]["n"] == 10, value
        assert browser not in _browsers(worker.pid)


@pytest.mark.full_chromium  # breaks BROWSERQ_CHROMIUM_PATH, the chromium engine's
def test_a_worker_process_without_a_usable_browser_is_replaced(tmp_path: Path, pg_url: str, site) -> None:
    broken = tmp_path / "chromium-broken"
    wrapper = tmp_path / "chromium"
    wrapper.write_text(f'#!/bin/sh\n[ -e "{broken}" ] && exit 1\nexec /usr/bin/chromium "$@"\n')
    wrapper.chmod(0o755)
    config = worker_env(tmp_path, pg_url, REDIS_URL, _templates(tmp_path))
    config.env["BROWSERQ_CHROMIUM_PATH"] = str(wrapper)
    url = f"{site.url}/quotes/"
    with celery_worker(config, concurrency=1, real_process=True) as worker:  # children found by command line
        assert _produce(config, "count", url)["status"] == "completed"
        (child,) = _children(worker.pid)
        (browser,) = _browsers(worker.pid)
        broken.touch()  # from now on Chromium cannot start on this host
        os.kill(browser, signal.SIGKILL)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(_produce, config, "count", url, 240)
            wait_until(lambda: child not in _children(worker.pid), timeout_s=120)  # it made way
            time.sleep(2)
            broken.unlink()  # the host recovers: a fresh process gets a browser
            value = pending.result(timeout=300)
        assert value["status"] == "completed" and value["outputs"]["n"] == 10, value
        assert child not in _children(worker.pid) and _children(worker.pid)
        log = config.log.read_text(errors="replace")
        assert "no usable browser" in log
