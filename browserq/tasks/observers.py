"""Who watches a worker process's runs: one place that lists them, so each concern
(Flower progress, Prometheus metrics, step log lines) plugs in with one line."""

from __future__ import annotations

from browserq.metrics.observer import metrics_observers
from browserq.run_events import RunObserver
from browserq.settings import Settings
from browserq.tasks.progress import progress_observer


def worker_observers(settings: Settings) -> list[RunObserver]:
    """The observers of a worker process's runtime, in the order they are told."""
    observers: list[RunObserver] = []
    observers.append(progress_observer(settings))  # PROGRESS state for Flower / AsyncResult.info
    observers += metrics_observers(settings)  # Prometheus runs and steps, when metrics are on
    return observers


__all__ = ["worker_observers"]
