"""Who watches a worker process's runs: one place that lists them, so each concern
(Flower progress, Prometheus metrics, step log lines) plugs in with one line."""

from __future__ import annotations

from browserq.runner.events import RunObserver
from browserq.settings import Settings


def worker_observers(settings: Settings) -> list[RunObserver]:
    """The observers of a worker process's runtime, in the order they are told."""
    observers: list[RunObserver] = []
    return observers


__all__ = ["worker_observers"]
