"""Prune: delete finished runs older than a cutoff, with their rows, artifacts and task results.

One batch at a time (``batch_size`` runs): the artifacts are deleted through the artifact store
(files or S3 objects), then the rows in one short transaction, then the result-backend entry
(``forget``, given by the caller who knows the Celery app). A file deleted before its rows is
harmless (the run is about to go); rows deleted before their files would leave orphans nobody
can find. Used by ``browserq prune`` and by the fleet's sweeper (``BROWSERQ_RETENTION_S``).
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

import structlog

from browserq.errors import ConfigError
from browserq.store import Store
from browserq.store.artifacts import ArtifactStore
from browserq.store.models import RunStatus, utcnow
from browserq.store.retention import PRUNABLE_STATUSES, PrunableRun

log = structlog.get_logger(__name__)

#: Runs per transaction: small enough that no prune holds a lock for long.
PRUNE_BATCH = 200
_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` → a timedelta; anything else is a ConfigError."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text or "")
    if not match or float(match.group(1)) <= 0:
        raise ConfigError(
            f"duration {text!r} is not like 30d, 12h, 90m, 45s or 2w (a positive number and a unit)"
        )
    return timedelta(seconds=float(match.group(1)) * _UNITS_S[match.group(2)])


def prunable_statuses(names: Iterable[str] | None) -> frozenset[RunStatus]:
    """The statuses asked for (default: every prunable one); a status still in play is refused."""
    if names is None:
        return PRUNABLE_STATUSES
    chosen: set[RunStatus] = set()
    for name in (n.strip().lower() for n in names if n.strip()):
        try:
            status = RunStatus(name)
        except ValueError:
            raise ConfigError(
                f"{name!r} is no run status; prune takes completed, failed, cancelled"
            ) from None
        if status not in PRUNABLE_STATUSES:
            raise ConfigError(
                f"runs that are {name} are never pruned (they may still run or wait for a person); "
                "prune takes completed, failed, cancelled"
            )
        chosen.add(status)
    if not chosen:
        raise ConfigError("no status given; prune takes completed, failed, cancelled")
    return frozenset(chosen)


class PruneListener(Protocol):
    """Told what each batch deleted (the worker's metrics: :mod:`browserq.tasks.observers`)."""

    def __call__(self, *, runs: int, rows: int, artifact_bytes: int) -> None: ...


@dataclass
class PruneReport:
    """What a prune deleted (or, dry, would delete)."""

    dry_run: bool
    runs: int = 0
    rows: int = 0
    artifact_files: int = 0
    artifact_bytes: int = 0
    by_status: Counter[str] = field(default_factory=Counter)


def prune_runs(
    store: Store,
    artifacts: ArtifactStore,
    *,
    older_than: timedelta,
    statuses: Iterable[RunStatus] = PRUNABLE_STATUSES,
    dry_run: bool = False,
    batch_size: int = PRUNE_BATCH,
    max_batches: int | None = None,
    forget: Callable[[str], None] | None = None,
    progress: Callable[[PruneReport], None] | None = None,
    pruned: PruneListener | None = None,
    now: datetime | None = None,
) -> PruneReport:
    """Delete (``dry_run``: count) the runs in ``statuses`` that finished over ``older_than`` ago
    (``pruned``: told what each batch deleted)."""
    cutoff = (now or utcnow()) - older_than
    report = PruneReport(dry_run=dry_run)
    after: tuple[datetime, str] | None = None  # a dry run pages past what it counted
    batches = 0
    while max_batches is None or batches < max_batches:
        found = store.retention.prunable_runs(
            finished_before=cutoff, statuses=statuses, limit=batch_size, after=after
        )
        if not found:
            break
        batches += 1
        if dry_run:
            after = (found[-1].finished_at, found[-1].id)
            _count(report, found, rows=0)
        elif not _prune_batch(store, artifacts, found, report, forget, pruned):
            break  # none of them could go (they changed status meanwhile): do not spin
        if progress is not None:
            progress(report)
    return report


def _prune_batch(
    store: Store,
    artifacts: ArtifactStore,
    found: list[PrunableRun],
    report: PruneReport,
    forget: Callable[[str], None] | None,
    pruned: PruneListener | None,
) -> int:
    for run in found:
        for path in run.artifact_paths:
            artifacts.delete(path)
        shutil.rmtree(artifacts.scratch_dir(run.id), ignore_errors=True)  # what no row names
    deleted, rows = store.retention.delete_finished_runs([r.id for r in found])
    gone = [r for r in found if r.id in set(deleted)]
    for run in gone:
        if forget is not None:
            try:
                forget(run.task_id or run.id)
            except Exception as exc:
                log.warning(
                    "prune: could not forget the task result", run_id=run.id, error=str(exc)
                )
    _count(report, gone, rows=rows)
    if pruned is not None:
        pruned(runs=len(gone), rows=rows, artifact_bytes=sum(r.artifact_bytes for r in gone))
    return len(gone)


def _count(report: PruneReport, runs: list[PrunableRun], *, rows: int) -> None:
    report.runs += len(runs)
    report.rows += rows
    report.artifact_files += sum(len(r.artifact_paths) for r in runs)
    report.artifact_bytes += sum(r.artifact_bytes for r in runs)
    report.by_status.update(r.status for r in runs)


__all__ = ["PRUNE_BATCH", "PruneListener", "PruneReport", "parse_duration", "prunable_statuses", "prune_runs"]
