"""Files a run leaves behind (screenshots, DOM snapshots, traces), in one artifact store.

The store is a directory (:class:`ArtifactDir`, the default: ``BROWSERQ_ARTIFACTS_DIR``) or an
S3-compatible bucket (:class:`browserq.store.s3.S3Artifacts`, ``BROWSERQ_ARTIFACTS_URL=s3://…``);
:func:`artifact_store` picks it from the settings. Both have the same interface
(:class:`ArtifactStore`): the runner writes through the journal with :meth:`~ArtifactStore.write`,
and readers (``show``, ``report``, opening a trace) use only :meth:`~ArtifactStore.read_bytes`,
:meth:`~ArtifactStore.local_path` and :meth:`~ArtifactStore.location`, so they work on any host
that sees the same store.

Directory layout: ``<base>/<run_id>/<name>``. Paths recorded in the database are relative to
``<base>`` (POSIX separators), so the directory can move. Writes are atomic: a temporary file in
the same directory, fsynced, then renamed over the target.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from browserq.errors import ConfigError
from browserq.store.artifact_paths import (
    StoredFile,
    artifact_relative,
    parse_artifacts_url,
    relative_parts,
    run_part,
    stored_file,
)
from browserq.store.errors import ArtifactPathDenied

if TYPE_CHECKING:
    from browserq.settings import Settings


class ArtifactStore(Protocol):
    """What the runner writes through and what readers read with, wherever the bytes live."""

    def write(self, run_id: str, name: str, data: bytes, *, content_type: str | None = None) -> StoredFile:
        """Keep ``data`` as ``<run_id>/<name>`` (whole or not at all); its record."""
        ...

    def read_bytes(self, relative: str, *, sha256: str | None = None) -> bytes:
        """The content of a stored artifact (what ``report`` inlines)."""
        ...

    def local_path(self, relative: str, *, sha256: str | None = None) -> Path:
        """A file on this host holding the artifact (what ``playwright show-trace`` opens)."""
        ...

    def location(self, relative: str) -> str:
        """Where a person finds the artifact: what ``show`` prints."""
        ...

    def scratch_dir(self, run_id: str) -> Path:
        """A directory on this host for the run's files in the making (trace chunks)."""
        ...

    def check(self) -> None:
        """Raise ConfigError now if artifacts cannot be stored (a worker checks at start)."""
        ...

    def delete(self, relative: str) -> None:
        """Remove a stored artifact (no error if it is gone): ``doctor``'s probe."""
        ...


class ArtifactDir:
    """Artifacts in a directory on this host (or a shared file system)."""

    def __init__(self, base: Path) -> None:
        self.base = Path(base)

    def __repr__(self) -> str:
        return f"ArtifactDir({str(self.base)!r})"

    def path_of(self, relative: str) -> Path:
        """The absolute path of a stored artifact's relative path; refuses paths that escape."""
        parts = relative_parts(relative, "artifact path")
        base = self.base.resolve()
        target = base.joinpath(*parts).resolve()
        if target == base or not target.is_relative_to(base):
            raise ArtifactPathDenied(f"artifact path {relative!r} resolves outside {base}")
        return target

    def read_bytes(self, relative: str, *, sha256: str | None = None) -> bytes:
        """The content of a stored artifact (what ``report`` inlines)."""
        return self.path_of(relative).read_bytes()

    def local_path(self, relative: str, *, sha256: str | None = None) -> Path:
        """A file on this host holding the artifact (what ``playwright show-trace`` opens)."""
        return self.path_of(relative)

    def location(self, relative: str) -> str:
        """Where a person finds the artifact: what ``show`` prints."""
        return str(self.base / relative)

    def scratch_dir(self, run_id: str) -> Path:
        """The run's own folder: trace chunks are made beside the artifacts."""
        return self.base / run_part(run_id)

    def check(self) -> None:
        """Nothing to reach: the directory is made when the first artifact is written."""

    def delete(self, relative: str) -> None:
        """Remove a stored artifact, and its run's folder if that leaves it empty."""
        target = self.path_of(relative)
        target.unlink(missing_ok=True)
        try:
            target.parent.rmdir()
        except OSError:
            pass  # other artifacts beside it

    def write(self, run_id: str, name: str, data: bytes, *, content_type: str | None = None) -> StoredFile:
        """Atomically write ``data`` to ``<base>/<run_id>/<name>``; ``name`` may have subdirs."""
        relative = artifact_relative(run_id, name)
        target = self.path_of(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        return stored_file(relative, data, target)


def artifact_store(settings: Settings) -> ArtifactStore:
    """The artifact store the settings name: ``artifacts_url`` when set (a directory,
    ``file:///path`` or ``s3://bucket/prefix``), else ``artifacts_dir``. Cheap: an object store
    is only contacted when it is used (or :meth:`ArtifactStore.check`\\ ed)."""
    try:
        target = parse_artifacts_url(settings.artifacts_url)
    except ConfigError as exc:
        raise ConfigError(f"BROWSERQ_ARTIFACTS_URL: {exc}") from None
    if target is None:
        return ArtifactDir(settings.artifacts_dir)
    if target.bucket is None:
        assert target.path is not None
        return ArtifactDir(target.path)
    from browserq.store.s3 import S3Artifacts

    # Downloads and trace chunks of an object store stay on this host, under artifacts_dir.
    return S3Artifacts(
        target.bucket, target.prefix, local_dir=settings.artifacts_dir, endpoint_url=settings.s3_endpoint_url
    )


__all__ = ["ArtifactDir", "ArtifactStore", "StoredFile", "artifact_store"]
