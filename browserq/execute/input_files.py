"""The files a run's ``file`` params pass, stored with the run at admission.

Written to the artifact store *before* the run row (a queued run never points at a file that is
not there), recorded as artifacts of kind ``input`` right after it, and deleted again when the
run is not accepted after all (a duplicate idempotency key, a broker that is down). Any worker
that sees the artifact store (a shared directory, a bucket) can then upload them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from browserq.store import Store
from browserq.store.artifacts import ArtifactStore, StoredFile

if TYPE_CHECKING:  # pragma: no cover
    from browserq.execute.accept import PreparedRun

log = structlog.get_logger(__name__)

#: The artifact kind of a file param's bytes.
INPUT_KIND = "input"


def write_input_files(artifacts: ArtifactStore | None, prepared: PreparedRun) -> list[tuple[str, StoredFile]]:
    """Store each file param's bytes as ``<run_id>/inputs/<param>/<filename>``."""
    if not prepared.files:
        return []
    if artifacts is None:
        raise ValueError("a run with file params is recorded with the artifact store (record_run(artifacts=...))")
    written: list[tuple[str, StoredFile]] = []
    try:
        for name, file in prepared.files.items():
            stored = artifacts.write(prepared.run_id, file.artifact_name(name), file.content,
                                     content_type=file.content_type)
            written.append((name, stored))
    except BaseException:
        discard_input_files(artifacts, prepared)
        raise
    return written


def record_input_files(store: Store, prepared: PreparedRun, written: list[tuple[str, StoredFile]]) -> None:
    """The artifact rows of the files :func:`write_input_files` stored (the run row exists)."""
    for name, stored in written:
        store.steps.add_artifact(
            run_id=prepared.run_id, step_attempt_id=None, kind=INPUT_KIND, path=stored.path,
            content_type=prepared.files[name].content_type, size=stored.size, sha256=stored.sha256,
        )


def discard_input_files(artifacts: ArtifactStore | None, prepared: PreparedRun) -> None:
    """Delete a refused run's input files (best effort: a leftover file harms nobody)."""
    if artifacts is None:
        return
    for name in prepared.files:
        relative = prepared.params[name]["artifact"]
        try:
            artifacts.delete(relative)
        except Exception as exc:  # the run is refused anyway; say so and go on
            log.warning("could not delete a refused run's input file", path=relative, error=str(exc))
