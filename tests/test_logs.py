"""browserq's logging set-up: one handler renders structlog events and stdlib records alike, step
lines follow BROWSERQ_STEP_LOG_LEVEL, and Celery's success line never carries a run's outputs."""

from __future__ import annotations

import json
import logging

import pytest

from browserq.execute.run_log import RunLog
from browserq.logs import configure_logging
from browserq.runner.state import StepEvent
from browserq.settings import load_settings

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
