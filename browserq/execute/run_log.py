"""A run's life in the log: started, each step attempt finished, each wait for a person begun and
ended, the run ended — one line each.

The lines carry what an operator filters on (run id, template, status, error code, durations);
never params or outputs (outputs live in the run store; Celery's own "succeeded" line is cut down
to match in :mod:`browserq.logs`). Step lines are logged at ``BROWSERQ_STEP_LOG_LEVEL`` (INFO by
default; DEBUG hides them at the usual INFO).
"""

from __future__ import annotations

import logging

import structlog

from browserq.run_events import (
    HandoffEnded,
    RunEnded,
    RunObserver,
    RunStarted,
    RunWaiting,
    StepEvent,
)

log = structlog.get_logger("browserq.runs")

#: How a run's end is worded, by status (``retrying``: it goes back to the queue).
_ENDED = {"retrying": "run will be retried", "interrupted": "run interrupted; it continues elsewhere"}


class RunLog(RunObserver):
    """Writes the run-started, step-finished and run-ended lines."""

    def __init__(self, step_level: str = "INFO") -> None:
        level = logging.getLevelName(step_level.upper())
        self.step_level = level if isinstance(level, int) else logging.INFO

    def run_started(self, event: RunStarted) -> None:
        log.info("run started", run_id=event.run_id, template=event.template, version=event.version,
                 attempt=event.attempt, worker=event.worker)

    def step_finished(self, event: StepEvent) -> None:
        log.log(self.step_level, "step finished", run_id=event.run_id, path=event.step_path,
                step_id=event.step_id, action=event.action, attempt=event.attempt, status=event.status,
                duration_ms=round(event.duration_ms), error_code=event.error_code)

    def run_waiting(self, event: RunWaiting) -> None:
        """At WARNING: a person is needed (the line never holds the one-time link itself)."""
        log.warning("run waiting for a person", run_id=event.run_id, path=event.step_path,
                    deadline=event.deadline, live_view=f"browserq live {event.run_id}"
                    if event.live_url else "none (the worker could not serve one)")

    def handoff_ended(self, event: HandoffEnded) -> None:
        log.info("handoff ended", run_id=event.run_id, path=event.step_path, outcome=event.outcome,
                 waited_s=round(event.waited_s, 1))

    def run_ended(self, event: RunEnded) -> None:
        level = logging.WARNING if event.status == "interrupted" else logging.INFO
        log.log(level, _ENDED.get(event.status, "run finished"), run_id=event.run_id,
                template=event.template, status=event.status, error_code=event.error_code,
                duration_s=round(event.duration_s, 3) if event.duration_s is not None else None)


__all__ = ["RunLog"]
