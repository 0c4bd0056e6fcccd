"""The run observer that turns a worker process's run and step events into metrics.

Recording is a few in-memory (or, in a worker, mmapped-file) increments: cheap enough to do on
the event-loop thread, where the step events arrive.
"""

from __future__ import annotations

from browserq.metrics import definitions as m
from browserq.run_events import (
    HandoffEnded,
    RunEnded,
    RunObserver,
    RunStarted,
    RunWaiting,
    StepEvent,
)
from browserq.settings import Settings

HANDOFF_OUTCOMES = frozenset({"condition", "continued", "gave_up", "timeout", "interrupted", "handed_over"})


class MetricsObserver(RunObserver):
    """Runs started and ended, their durations; step attempts, their durations and retries."""

    def run_started(self, event: RunStarted) -> None:
        m.RUNS_IN_PROGRESS.labels(m.template_label(event.template)).inc()

    def step_finished(self, event: StepEvent) -> None:
        action, status = m.action_label(event.action), m.one_of(event.status, m.STEP_STATUSES)
        m.STEP_DURATION.labels(action, status).observe(max(0.0, event.duration_ms) / 1000)
        if event.attempt > 1:
            m.STEPS_RETRIED.labels(action).inc()

    def run_waiting(self, event: RunWaiting) -> None:
        m.RUNS_WAITING_FOR_HUMAN.labels(m.template_label(event.template)).inc()

    def handoff_ended(self, event: HandoffEnded) -> None:
        outcome = m.one_of(event.outcome, HANDOFF_OUTCOMES)
        m.RUNS_WAITING_FOR_HUMAN.labels(m.template_label(event.template)).dec()
        m.HANDOFFS.labels(outcome).inc()
        m.HANDOFF_WAIT.labels(outcome).observe(max(0.0, event.waited_s))

    def run_ended(self, event: RunEnded) -> None:
        """Told only for an execution whose start was told (:class:`~browserq.run_events.Observers`
        pairs them), so the in-progress gauge never drifts."""
        template, status = m.template_label(event.template), m.one_of(event.status, m.RUN_STATUSES)
        m.RUNS_IN_PROGRESS.labels(template).dec()
        m.RUNS_FINISHED.labels(template, status, m.code_label(event.error_code)).inc()
        if event.duration_s is not None:
            m.RUN_DURATION.labels(template, status).observe(event.duration_s)


def metrics_observers(settings: Settings) -> list[RunObserver]:
    """A worker's metrics observer when metrics are on (``BROWSERQ_METRICS_PORT``), else none."""
    return [MetricsObserver()] if settings.metrics_port is not None else []


__all__ = ["MetricsObserver", "metrics_observers"]
