"""Retention in the fleet: the sweeper's bounded prune pass, and forgetting a pruned run's Celery result
(database row or Redis key)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import structlog
from celery import Celery

from browserq.execute.retention import prune_runs
from browserq.settings import Settings
from browserq.store import Store
from browserq.store.artifacts import artifact_store
from browserq.store.models import utcnow
from browserq.store.retention import PRUNABLE_STATUSES
from browserq.tasks.observers import retention_meter

log = structlog.get_logger(__name__)

#: Batches one sweep may prune (200 runs each): a sweep stays short, the backlog goes over ticks.
BATCHES_PER_SWEEP = 5


def result_forgetter(settings: Settings) -> Callable[[str], None]:
    """``forget(task_id)`` on the settings' result backend: the ``celery_taskmeta`` row of a
    database backend, the ``celery-task-meta-<id>`` key of Redis. An app of its own, so the
    backend is the one these settings name (not whatever the shared app was configured with)."""
    app = Celery("browserq-retention", set_as_current=False)
    app.conf.update(result_backend=settings.effective_result_backend, result_extended=False)
    backend = app.backend
    unsupported = False

    def forget(task_id: str) -> None:
        nonlocal unsupported
        if unsupported:
            return
        try:
            backend.forget(task_id)
        except NotImplementedError:  # rpc://, disabled: nothing is stored, so nothing to forget
            unsupported = True

    return forget


def prune_expired(store: Store, settings: Settings) -> int:
    """The fleet's retention (``BROWSERQ_RETENTION_S``), one bounded pass per sweep: the runs pruned."""
    if settings.retention_s is None:
        return 0
    age = timedelta(seconds=settings.retention_s)
    if not store.retention.prunable_runs(finished_before=utcnow() - age, statuses=PRUNABLE_STATUSES, limit=1):
        return 0  # the usual sweep: one index lookup, no artifact store or result backend opened
    report = prune_runs(
        store,
        artifact_store(settings),
        older_than=age,
        max_batches=BATCHES_PER_SWEEP,
        forget=result_forgetter(settings),
        pruned=retention_meter(settings),
    )
    if report.runs:
        log.info(
            "pruned finished runs",
            runs=report.runs,
            rows=report.rows,
            artifact_bytes=report.artifact_bytes,
        )
    return report.runs


__all__ = ["BATCHES_PER_SWEEP", "prune_expired", "result_forgetter"]
