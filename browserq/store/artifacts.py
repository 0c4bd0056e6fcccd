"""Files a run leaves behind (screenshots, DOM snapshots, traces), under one artifacts directory.

Layout: ``<base>/<run_id>/<name>``. Paths recorded in the database are relative to ``<base>``
(POSIX separators), so the directory can move. Writes are atomic: a temporary file in the same
directory, fsynced, then renamed over the target.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from browserq.guards import artifact_name_problem
from browserq.store.errors import ArtifactPathDenied

if TYPE_CHECKING:
    from browserq.settings import Settings


@dataclass(frozen=True, slots=True)
class StoredFile:
    path: str  # relative to the artifacts dir, POSIX separators: "<run_id>/<name>"
    size: int
    sha256: str
    absolute: Path


def _relative_parts(relative: str, what: str) -> tuple[str, ...]:
    """Split a relative path, refusing anything that could leave the directory it is joined to.

    The lexical rules are :func:`browserq.guards.artifact_name_problem`'s (no absolute paths,
    drive letters, backslashes, NUL or ``..``).
    """
    problem = artifact_name_problem(relative)
    if problem:
        raise ArtifactPathDenied(f"{what}: {problem}")
    parts = tuple(p for p in PurePosixPath(relative).parts if p != ".")
    if not parts:
        raise ArtifactPathDenied(f"{what} {relative!r} does not name a file")
    return parts


class ArtifactDir:
    def __init__(self, base: Path) -> None:
        self.base = Path(base)

    def __repr__(self) -> str:
        return f"ArtifactDir({str(self.base)!r})"

    def path_of(self, relative: str) -> Path:
        """The absolute path of a stored artifact's relative path; refuses paths that escape."""
        parts = _relative_parts(relative, "artifact path")
        base = self.base.resolve()
        target = base.joinpath(*parts).resolve()
        if target == base or not target.is_relative_to(base):
            raise ArtifactPathDenied(f"artifact path {relative!r} resolves outside {base}")
        return target

    def read_bytes(self, relative: str) -> bytes:
        """The content of a stored artifact (what ``report`` inlines)."""
        return self.path_of(relative).read_bytes()

    def local_path(self, relative: str) -> Path:
        """A file on this host holding the artifact (what ``playwright show-trace`` opens)."""
        return self.path_of(relative)

    def location(self, relative: str) -> str:
        """Where a person finds the artifact: what ``show`` prints."""
        return str(self.base / relative)

    def write(self, run_id: str, name: str, data: bytes) -> StoredFile:
        """Atomically write ``data`` to ``<base>/<run_id>/<name>``; ``name`` may have subdirs."""
        run_parts = _relative_parts(run_id, "run id")
        if len(run_parts) != 1:
            raise ArtifactPathDenied(f"run id {run_id!r} must be a single path component")
        name_parts = _relative_parts(name, "artifact name")
        relative = "/".join((*run_parts, *name_parts))
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
        return StoredFile(
            path=relative,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            absolute=target,
        )


def artifact_store(settings: Settings) -> ArtifactDir:
    """The artifact store the settings name: ``artifacts_url`` when set, else ``artifacts_dir``."""
    return ArtifactDir(settings.artifacts_dir)
