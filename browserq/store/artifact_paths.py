"""What every artifact store shares: the record of a written file, the name guards, and the
forms of ``BROWSERQ_ARTIFACTS_URL``.

A stored artifact is named by its *relative path* ``<run_id>/<name>`` (POSIX separators): the
database keeps only that, so the same rows work whether the bytes sit in a directory or in a
bucket, and a directory or bucket can move. Kept apart from the stores themselves so that the
settings can check the URL's form without importing a store (nor boto3).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from browserq.errors import ConfigError
from browserq.guards import artifact_name_problem
from browserq.store.errors import ArtifactPathDenied

#: What ``BROWSERQ_ARTIFACTS_URL`` accepts, for error messages.
ACCEPTED_FORMS = "a directory (/srv/artifacts), file:///srv/artifacts or s3://bucket/prefix"


@dataclass(frozen=True, slots=True)
class StoredFile:
    path: str  # relative to the store, POSIX separators: "<run_id>/<name>"
    size: int
    sha256: str
    absolute: Path | None  # the file on this host (a directory store); None on an object store


def stored_file(relative: str, data: bytes, absolute: Path | None) -> StoredFile:
    """The record of ``data`` written as ``relative``: its size and sha256."""
    return StoredFile(relative, len(data), hashlib.sha256(data).hexdigest(), absolute)


def relative_parts(relative: str, what: str) -> tuple[str, ...]:
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


def run_part(run_id: str) -> str:
    """The run id as one path component (a run's artifacts never share another run's folder)."""
    parts = relative_parts(run_id, "run id")
    if len(parts) != 1:
        raise ArtifactPathDenied(f"run id {run_id!r} must be a single path component")
    return parts[0]


def artifact_relative(run_id: str, name: str) -> str:
    """``<run_id>/<name>``, checked: what a store writes and the database records."""
    return "/".join((run_part(run_id), *relative_parts(name, "artifact name")))


# --- BROWSERQ_ARTIFACTS_URL ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ArtifactsTarget:
    """Where ``artifacts_url`` says artifacts go: a directory, or a bucket and key prefix."""

    path: Path | None = None
    bucket: str | None = None
    prefix: str = ""


def _shown(url: str) -> str:
    """The URL as an error may show it: credentials in it are replaced by ``***``."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


def parse_artifacts_url(url: str | None) -> ArtifactsTarget | None:
    """The target ``url`` names, or None when it is unset (then ``artifacts_dir`` is used).

    Raises ConfigError for anything else than a path, ``file:///path`` or ``s3://bucket[/prefix]``.
    """
    if url is None or not url.strip():
        return None
    if "://" not in url:
        return ArtifactsTarget(path=Path(url).expanduser())
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ConfigError(f"{_shown(url)!r} is not a valid URL ({exc}); use {ACCEPTED_FORMS}") from None
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ConfigError(f"{_shown(url)!r}: a file URL names an absolute path on this host (file:///srv/artifacts)")
        return ArtifactsTarget(path=Path(parts.path))
    if scheme != "s3":
        raise ConfigError(f"{_shown(url)!r} is not an artifacts location; use {ACCEPTED_FORMS}")
    if "@" in parts.netloc or parts.query or parts.fragment:
        raise ConfigError(
            f"{_shown(url)!r}: an s3:// URL is s3://bucket/prefix only; credentials come from the AWS_* "
            "variables or ~/.aws (and the endpoint from BROWSERQ_S3_ENDPOINT_URL)"
        )
    return ArtifactsTarget(bucket=_bucket(parts.netloc, url), prefix=_prefix(parts.path, url))


def _bucket(bucket: str, url: str) -> str:
    """An S3 bucket name: 3-63 lowercase letters, digits, dots and dashes."""
    ok = 3 <= len(bucket) <= 63 and bucket[0].isalnum() and bucket[-1].isalnum()
    if not ok or any(not (c.islower() or c.isdigit() or c in ".-") for c in bucket) or not bucket.isascii():
        raise ConfigError(
            f"{_shown(url)!r}: {bucket!r} is not a bucket name (3-63 lowercase letters, digits, '.' "
            "and '-'); use s3://bucket/prefix"
        )
    return bucket


def _prefix(path: str, url: str) -> str:
    """The key prefix of an s3:// URL (no leading or trailing slash), guarded like a name."""
    prefix = path.strip("/")
    if not prefix:
        return ""
    try:
        return "/".join(relative_parts(prefix, "key prefix"))
    except ArtifactPathDenied:
        raise ConfigError(
            f"{_shown(url)!r}: the key prefix must be names separated by '/' (no '..', backslash or NUL)"
        ) from None


__all__ = [
    "ACCEPTED_FORMS",
    "ArtifactsTarget",
    "StoredFile",
    "artifact_relative",
    "parse_artifacts_url",
    "relative_parts",
    "run_part",
    "stored_file",
]
