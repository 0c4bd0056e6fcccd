"""What download and upload steps need beyond the page: the run's file limits and its artifacts.

One :class:`RunFiles` per run attempt (the runner keeps it in the run's state), so the bytes
downloaded add up across steps against ``BROWSERQ_MAX_RUN_DOWNLOAD_BYTES``. Artifacts are read
through the journal's artifact store (``read``), never through the store itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browserq.errors import Codes, StepFailed


@dataclass
class RunFiles:
    """The run's file limits, its uploads directory and the door to its artifacts' bytes."""

    run_id: str
    #: ``read(relative)`` → the bytes of a stored artifact (blocking: called in a thread).
    read: Callable[[str], bytes]
    max_download_bytes: int
    max_run_download_bytes: int
    max_file_bytes: int  # an upload from the uploads directory (BROWSERQ_MAX_FILE_PARAM_BYTES)
    uploads_dir: Path | None = None
    downloaded: int = 0  # bytes this run attempt has downloaded so far
    step_path: str = ""  # the step running now (where a warning about a download points)
    #: Bounds every download of the run's context while it arrives: an ``actions.download_watch.DownloadWatch``.
    watch: Any = None

    @classmethod
    def of(cls, settings: Any, run_id: str, read: Callable[[str], bytes]) -> RunFiles:
        """From browserq's settings (``BROWSERQ_MAX_*DOWNLOAD_BYTES``, ``BROWSERQ_UPLOADS_DIR``)."""
        return cls(
            run_id=run_id,
            read=read,
            max_download_bytes=settings.max_download_bytes,
            max_run_download_bytes=settings.max_run_download_bytes,
            max_file_bytes=settings.max_file_param_bytes,
            uploads_dir=settings.uploads_dir,
        )


def run_files(ctx: Any) -> RunFiles:
    """The step context's :class:`RunFiles` (a runner that gives none cannot move files)."""
    files = getattr(ctx, "files", None)
    if not isinstance(files, RunFiles):
        raise StepFailed(Codes.INVALID_STEP_INPUT, "this runner gives steps no file access (download/upload)")
    return files
