"""browserq's logging set-up: one handler renders structlog events and stdlib records alike, step
lines follow BROWSERQ_STEP_LOG_LEVEL, and Celery's success line never carries a run's outputs."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis

from browserq.execute.run_log import RunLog
from browserq.logs import configure_logging
from browserq.run_events import StepEvent
from browserq.settings import load_settings
from tests.conftest import REPO, TEST_SECRET_KEY
from tests.support.http import html_pages, serve_http
from tests.support.processes import stop
from tests.support.redis import BROKER_DB, redis_url
from tests.support.templates import write_templates
from tests.support.workers import (
    browserq_env,
    read_log,
    spawn_logged,
    wait_for_log,
    worker_settings,
)

BROKER = redis_url(BROKER_DB)

STEP = StepEvent("2", "open", "navigate", 1, "succeeded", 12.4, None, None, None, run_id="r1")


def _json_lines(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.mark.parametrize(("step_level", "shown"), [("INFO", True), ("DEBUG", False)])
def test_step_lines_follow_their_own_level(capsys: pytest.CaptureFixture[str], step_level: str, shown: bool) -> None:
    configure_logging(load_settings(log_format="json", log_level="INFO"))
    RunLog(step_level).step_finished(STEP)
    rows = _json_lines(capsys)
    assert bool(rows) is shown
    if shown:
        assert rows[0] | {"timestamp": None} == {
            "event": "step finished", "level": "info", "logger": "browserq.runs", "run_id": "r1", "path": "2",
            "step_id": "open", "action": "navigate", "attempt": 1, "status": "succeeded", "duration_ms": 12,
            "error_code": None, "timestamp": None,
        }


def test_one_handler_renders_stdlib_records_with_their_level_and_no_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(load_settings(log_format="json"))
    configure_logging(load_settings(log_format="json"))  # again (after a fork): still one line each
    trace = logging.getLogger("celery.app.trace")
    trace.info("Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s",
               {"name": "browserq.run_template", "id": "r1", "runtime": 1.5, "return_value": "{'outputs': 'SCRAPED'}"})
    logging.getLogger("celery.worker").warning("a %s warning", "real")
    rows = _json_lines(capsys)
    assert [r["level"] for r in rows] == ["info", "warning"]
    assert rows[0]["event"] == "Task browserq.run_template[r1] succeeded in 1.5s (result in the run store)"
    assert rows[1] == rows[1] | {"event": "a real warning", "logger": "celery.worker"}


# --- a real worker in JSON mode: every line it prints, from start to warm shutdown -------------
HELLO = {
    "hello": """
params:
  url: {type: url, required: true}
settings: {trace: off, step_timeout_s: 10, run_retries: 0}
steps:
  - {action: navigate, url: "${url}"}
  - {action: get, what: title, into: title}
"""
}


def test_a_retried_result_backend_write_is_one_line_with_its_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Celery's backend retries a write through a locked row or a dropped connection and logs each
    retry with its traceback: browserq's handler keeps the warning and the error, not the traceback."""
    from celery.backends.base import Backend
    from sqlalchemy.exc import OperationalError

    from browserq.celery_app import app

    configure_logging(load_settings(log_format="json"))
    backend = Backend(app=app)
    backend.always_retry, backend.max_retries, backend.base_sleep_between_retries_ms = True, 2, 1
    backend.exception_safe_to_retry = lambda exc: True  # type: ignore[method-assign]
    failures = iter([OperationalError("INSERT …", {}, Exception("canceling statement due to lock timeout\nLINE 1"))])

    def store() -> str:
        for failure in failures:
            raise failure
        return "stored"

    assert backend._ensure_retryable(store) == "stored"
    rows = [r for r in _json_lines(capsys) if r["logger"] == "celery.backends.base"]
    assert len(rows) == 1 and rows[0]["level"] == "warning", rows
    assert rows[0]["event"].startswith("result backend: store failed (OperationalError: ") and \
        "canceling statement due to lock timeout" in rows[0]["event"] and "retrying 1 more times" in rows[0]["event"]
    assert "exception" not in rows[0] and "Traceback" not in json.dumps(rows), rows


def test_every_line_a_json_worker_prints_is_json(tmp_path: Path) -> None:
    """``BROWSERQ_LOG_FORMAT=json browserq worker 2>&1 | jq`` (README § Logs) must not stop at a
    line: Celery's banner, its own logs, the shutdown notice, a library's print or warning and a
    thread's traceback in a pool child are each a JSON object with a level and a timestamp."""
    queue = f"bq_logs_{uuid.uuid4().hex[:8]}"
    database = f"sqlite:///{tmp_path / 'logs.db'}"
    env = browserq_env({
        **worker_settings(broker_url=BROKER, database_url=database, artifacts_dir=tmp_path / "artifacts",
                          templates_dir=write_templates(tmp_path / "templates", HELLO), queue=queue,
                          secret_key=TEST_SECRET_KEY),
        "BROWSERQ_LOG_FORMAT": "json", "BROWSERQ_SWEEP_IN_WORKERS": "false",
    })
    log = tmp_path / "worker.log"
    proc = spawn_logged([sys.executable, "-m", "browserq.cli", "worker", "-c", "1", "-n", f"{queue}@%h",
                         "--without-gossip", "--without-mingle", "--include", "tests.support.noisy_worker"],
                        env, log)
    try:
        wait_for_log(proc, log, lambda text: " ready." in text, 90, "the worker to start")
        with serve_http(html_pages({"/": "<title>hello</title>"})) as host:
            code = ("from browserq import run_template\n"
                    f"print(run_template.delay('hello', params={{'url': 'http://{host}/'}}).get(timeout=90)['status'])")
            done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                                  timeout=180)
        assert done.stdout.strip().splitlines()[-1:] == ["completed"], done.stderr[-3000:]
        wait_for_log(proc, log, lambda text: "a thread failed" in text, 30, "the thread's traceback")
    finally:
        stop(proc, 60, group=True)
        redis.Redis.from_url(BROKER).delete(queue, f"{queue}.sweep", f"{queue}.webhooks")
    lines = [line for line in read_log(log).splitlines() if line.strip()]
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"not JSON: {line!r}\n" + "\n".join(lines[:60])) from None
    assert all(isinstance(r, dict) and {"event", "level", "timestamp"} <= set(r) for r in rows), rows
    events = [r["event"] for r in rows]
    text = "\n".join(map(str, events))
    for said in ("noisy: imported", "noisy: a stray print", "noisy: a partial line on stderr",
                 "noisy: a library warning", "noisy: a thread failed", "Warm shutdown"):
        assert said in text, (said, text[-3000:])
    [starting] = [r for r in rows if r["event"] == "worker starting"]  # the banner, as one line
    assert starting["concurrency"] == 1 and queue in starting["queues"]
    [failed] = [r for r in rows if "noisy: a thread failed" in str(r.get("exception", "")) + r["event"]]
    assert failed["level"] == "error" and "Traceback" in failed.get("exception", "")


def test_every_line_a_json_beat_prints_is_json(tmp_path: Path) -> None:
    """``browserq beat`` in JSON mode: no banner, no plain "checked" line — what it loaded and the
    lock it took are JSON records like the rest."""
    queue = f"bq_logs_{uuid.uuid4().hex[:8]}"
    schedules = tmp_path / "schedules.yml"
    schedules.write_text("schedules:\n  - {name: hello, template: hello, params: {url: 'http://127.0.0.1:9/'}, "
                         "every: 1h}\n")
    env = browserq_env({
        **worker_settings(broker_url=BROKER, database_url=f"sqlite:///{tmp_path / 'beat.db'}",
                          artifacts_dir=tmp_path / "artifacts", queue=queue, secret_key=TEST_SECRET_KEY,
                          templates_dir=write_templates(tmp_path / "templates", HELLO)),
        "BROWSERQ_LOG_FORMAT": "json", "BROWSERQ_SCHEDULES_FILE": str(schedules),
    })
    log = tmp_path / "beat.log"
    proc = spawn_logged([sys.executable, "-m", "browserq.cli", "beat", "--loglevel", "INFO"], env, log)
    try:
        wait_for_log(proc, log, lambda text: "beat lock taken" in text, 90, "beat to take its lock")
    finally:
        stop(proc, 60, group=True)
        redis.Redis.from_url(BROKER).delete(f"browserq:beat-lock:{queue}")
    lines = [line for line in read_log(log).splitlines() if line.strip()]
    for line in lines:
        try:
            json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"not JSON: {line!r}\n" + "\n".join(lines[:40])) from None
    events = [json.loads(line)["event"] for line in lines]
    for said in ("schedules loaded", "beat lock taken"):
        assert any(e.startswith(said) for e in events), (said, events)
