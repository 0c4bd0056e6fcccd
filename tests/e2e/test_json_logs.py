"""A real prefork worker with ``BROWSERQ_LOG_FORMAT=json``: every line on stderr is one JSON object
with its real level and no Celery prefix; a run's life is its own lines (started, each step,
finished with its duration); the run's scraped outputs appear nowhere in the log."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from browserq.errors import RunFailed
from tests.e2e.conftest import REDIS_URL, worker_env
from tests.support import REPO
from tests.support.polling import wait_until
from tests.support.processes import stop
from tests.support.workers import CELERY

pytestmark = pytest.mark.slow


def _lines(path: Path) -> list[dict]:
    text = path.read_text(errors="replace")
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"a stderr line is not JSON: {line[:300]!r}") from None
    return rows


def test_json_logs_are_clean_lines_of_a_runs_life(tmp_path: Path, pg_url: str, e2e_templates: Path, site) -> None:
    from browserq import run_template
    from tests.conftest import producer_env

    config = worker_env(tmp_path, pg_url, REDIS_URL, e2e_templates)
    env = {**config.env, "BROWSERQ_LOG_FORMAT": "json", "BROWSERQ_STEP_LOG_LEVEL": "INFO"}
    err, out = tmp_path / "stderr.log", tmp_path / "stdout.log"
    with err.open("wb") as e, out.open("wb") as o:
        proc = subprocess.Popen([
            *CELERY, "worker", "--pool", "prefork", "--concurrency", "1", "-Q", f"{config.queue},{config.queue}.sweep",
            "-n", f"{config.queue}@%h", "--loglevel", "INFO", "--without-gossip", "--without-mingle",
        ], env=env, stdout=o, stderr=e, cwd=REPO, start_new_session=True)
    try:
        wait_until(lambda: "ready." in err.read_text(errors="replace") or proc.poll() is not None, 90,
                   "the worker to start")
        with producer_env(env):
            done = run_template.delay("quotes@1.2", params={"start_url": f"{site.url}/quotes/"}).get(timeout=120)
            failed = run_template.delay("slow", params={"url": f"{site.url}/status/404"})
            with pytest.raises(RunFailed):
                failed.get(timeout=120)
    finally:
        stop(proc, 60)
    assert done["status"] == "completed"
    rows = _lines(err)
    text = err.read_text()
    assert "ForkPoolWorker" not in text and "WARNING/" not in text
    assert all({"event", "level", "timestamp"} <= set(r) for r in rows)

    received = [r for r in rows if "received" in r["event"] and done["run_id"] in r["event"]]
    assert received and received[0]["level"] == "info" and received[0]["logger"].startswith("celery")
    mine = [r for r in rows if r.get("run_id") == done["run_id"] and r.get("logger") == "browserq.runs"]
    events = [r["event"] for r in mine]
    assert events[0] == "run started" and events[-1] == "run finished"
    assert mine[0]["template"] == "quotes" and mine[0]["attempt"] == 1 and mine[0]["worker"]
    steps = [r for r in mine if r["event"] == "step finished"]
    assert len(steps) >= 11 and {s["action"] for s in steps} >= {"navigate", "extract", "click"}
    assert all(isinstance(s["duration_ms"], int) and s["path"] and s["status"] for s in steps)
    assert mine[-1]["status"] == "completed" and mine[-1]["duration_s"] > 0

    ended = [r for r in rows if r.get("run_id") == failed.id and r["event"] == "run finished"]
    assert ended and ended[0]["status"] == "failed" and ended[0]["error_code"]
    # Outputs live in the run store, never in the log (Celery's success line included).
    quote = done["outputs"]["quotes"][0]["author"]
    assert quote not in text, [line for line in text.splitlines() if quote in line][:2]
    success = [r for r in rows if "succeeded in" in r["event"]]
    assert success and all("result in the run store" in r["event"] for r in success)
