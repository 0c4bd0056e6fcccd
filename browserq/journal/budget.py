"""The run's disk budget for artifacts: every byte it stores, counted as it is stored.

Screenshots, downloads, failure snapshots, blocked-request lists and traces all reach the store
through :meth:`ArtifactBudget.write`, which counts them — the run's earlier attempts included,
read from the store once, at the first write — and refuses the one that would take the run past
``BROWSERQ_MAX_RUN_ARTIFACT_BYTES`` with ``ARTIFACTS_TOO_LARGE`` (nothing of it is written).
What a refusal means is the caller's: a step fails with that code; failure evidence is skipped
and the run says so in a warning (:mod:`browserq.runner.evidence`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import structlog

from browserq.errors import Codes, StepFailed, StoreError
from browserq.store.artifacts import ArtifactStore, StoredFile
from browserq.store.steps import Steps

log = structlog.get_logger(__name__)


class ArtifactBudget:
    """An :class:`ArtifactStore` that keeps one run within its artifact budget (composition:
    every other call goes to the store underneath unchanged)."""

    def __init__(self, store: ArtifactStore, limit: int, earlier: Callable[[], int]) -> None:
        self.store = store
        self.limit = limit
        self._earlier = earlier  # bytes the run's earlier attempts stored (read once)
        self.used: int | None = None
        self._lock = threading.Lock()  # writes run in threads

    def write(
        self, run_id: str, name: str, data: bytes, *, content_type: str | None = None
    ) -> StoredFile:
        """Store ``data`` if the run's artifacts stay within the budget; ARTIFACTS_TOO_LARGE if not."""
        with self._lock:
            if self.used is None:
                self.used = self._earlier()
            total = self.used + len(data)
            if total > self.limit:
                raise StepFailed(
                    Codes.ARTIFACTS_TOO_LARGE,
                    f"artifact {name!r} ({len(data):,} bytes) would take the run's artifacts to {total:,} "
                    f"bytes, over the limit of {self.limit:,} (BROWSERQ_MAX_RUN_ARTIFACT_BYTES); it was not kept",
                )
            self.used = total
        try:
            return self.store.write(run_id, name, data, content_type=content_type)
        except BaseException:
            with self._lock:
                self.used = (self.used or 0) - len(data)
            raise

    def read_bytes(self, relative: str, *, sha256: str | None = None) -> bytes:
        return self.store.read_bytes(relative, sha256=sha256)

    def local_path(self, relative: str, *, sha256: str | None = None) -> Path:
        return self.store.local_path(relative, sha256=sha256)

    def location(self, relative: str) -> str:
        return self.store.location(relative)

    def scratch_dir(self, run_id: str) -> Path:
        return self.store.scratch_dir(run_id)

    def check(self) -> None:
        self.store.check()

    def delete(self, relative: str) -> None:
        self.store.delete(relative)


def budgeted(steps: Steps, artifacts: ArtifactStore, run_id: str, limit: int) -> ArtifactBudget:
    """``artifacts`` within ``limit`` bytes for the run, counting what its earlier attempts stored."""

    def earlier() -> int:
        try:
            return sum(row.size for row in steps.artifacts(run_id))
        except StoreError as exc:  # the database is away: this attempt's own bytes still count
            log.warning("earlier artifacts of the run not counted", run_id=run_id, error=str(exc))
            return 0

    return ArtifactBudget(artifacts, limit, earlier)
