"""Artifacts in an S3-compatible bucket (AWS S3, MinIO, Ceph, …): ``BROWSERQ_ARTIFACTS_URL=s3://bucket/prefix``.

The same interface as :class:`browserq.store.artifacts.ArtifactDir`, so that workers on many
hosts write where ``show``, ``report`` and a trace viewer on any other host read. An artifact
``<run_id>/<name>`` is the object ``<prefix>/<run_id>/<name>``, written whole by one
``put_object`` (S3 has no half-written objects) with its content type and its sha256 in the
object's metadata (``x-amz-meta-sha256``). Reading it on a host means a download into a cache
under ``artifacts_dir/.cache/s3/<bucket>/`` that is checked against that sha256 (or the one the
database recorded, when the reader passes it); a cached copy that still matches is not fetched
again. Trace chunks are made on the worker's disk (Playwright writes files) under
``artifacts_dir/.cache/scratch/<run_id>/`` and deleted once the trace is uploaded.

boto3 is an optional dependency (``pip install 'browserq[s3]'``), imported when the bucket is
first used. The endpoint is ``BROWSERQ_S3_ENDPOINT_URL`` (unset: AWS); credentials and region come
from boto3's usual sources (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``,
``~/.aws``, an instance role; ``AWS_DEFAULT_REGION``). Every call is blocking: the journal makes
them from a thread, never on the event loop.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import os
import tempfile
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from browserq.errors import Codes, ConfigError, StepFailed
from browserq.store.artifact_paths import (
    StoredFile,
    artifact_relative,
    relative_parts,
    run_part,
    stored_file,
)

#: Seconds to open a connection to the store, and to wait for an answer.
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 60.0
#: Tries of one call (botocore's standard retry mode: throttling and 5xx, with backoff).
MAX_ATTEMPTS = 3
_CHUNK = 1 << 20


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _endpoint_shown(endpoint_url: str | None) -> str:
    """The endpoint for messages (credentials in it hidden), or what boto3 uses without one."""
    if not endpoint_url:
        return "AWS S3 (no BROWSERQ_S3_ENDPOINT_URL)"
    parts = urlsplit(endpoint_url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl() if "@" in parts.netloc else endpoint_url


class S3Artifacts:
    """Artifacts as objects under ``s3://bucket/prefix/``; local copies under ``local_dir/.cache``."""

    def __init__(
        self, bucket: str, prefix: str = "", *, local_dir: Path, endpoint_url: str | None = None
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.local_dir = Path(local_dir)
        self.cache_dir = self.local_dir / ".cache" / "s3" / bucket
        self.endpoint_url = endpoint_url or None
        self._client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"S3Artifacts({self.url!r}, endpoint={_endpoint_shown(self.endpoint_url)!r})"

    @property
    def url(self) -> str:
        """``s3://bucket/prefix``: the store as ``BROWSERQ_ARTIFACTS_URL`` names it."""
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    def key_of(self, relative: str) -> str:
        """The object key of a stored artifact's relative path (guarded like a file name)."""
        parts = relative_parts(relative, "artifact path")
        return "/".join((self.prefix, *parts) if self.prefix else parts)

    def location(self, relative: str) -> str:
        """Where a person finds the artifact: ``s3://bucket/prefix/<run_id>/<name>``."""
        return f"s3://{self.bucket}/{self.key_of(relative)}"

    def scratch_dir(self, run_id: str) -> Path:
        """Trace chunks of the run, on this host, until the trace is uploaded."""
        return self.local_dir / ".cache" / "scratch" / run_part(run_id)

    # --- the client ----------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The boto3 S3 client, made once (boto3 clients are thread-safe; sessions are not)."""
        with self._lock:
            if self._client is None:
                self._client = self._make_client()
            return self._client

    def _make_client(self) -> Any:
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            raise ConfigError(
                f"BROWSERQ_ARTIFACTS_URL={self.url} needs boto3: pip install 'browserq[s3]'"
            ) from None
        options: dict[str, Any] = dict(
            connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S,
            retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS},
        )
        if self.endpoint_url:  # MinIO, Ceph & co. serve buckets as paths, not host names
            options["s3"] = {"addressing_style": "path"}
        try:  # botocore >= 1.36 adds CRC checksums some S3-compatible stores refuse; we send MD5
            config = Config(**options, request_checksum_calculation="when_required",
                            response_checksum_validation="when_required")
        except TypeError:
            config = Config(**options)
        return boto3.session.Session().client("s3", endpoint_url=self.endpoint_url, config=config)

    def _problem(self, exc: Exception, doing: str) -> ConfigError:
        """A failed call as one line that says what to fix (no traceback, no credentials)."""
        from botocore.exceptions import (
            ClientError,
            ConnectTimeoutError,
            EndpointConnectionError,
            NoCredentialsError,
            PartialCredentialsError,
        )

        where = f"the artifact store {self.url} at {_endpoint_shown(self.endpoint_url)}"
        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            return ConfigError(f"{doing}: no credentials for {where}: set AWS_ACCESS_KEY_ID and "
                               "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)")
        if isinstance(exc, EndpointConnectionError | ConnectTimeoutError):
            return ConfigError(f"{doing}: cannot reach {where} ({exc}); is it running? "
                               "Check BROWSERQ_S3_ENDPOINT_URL")
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            if code in ("404", "NoSuchBucket"):
                return ConfigError(f"{doing}: bucket {self.bucket!r} does not exist at "
                                   f"{_endpoint_shown(self.endpoint_url)}: create it (aws s3 mb "
                                   f"s3://{self.bucket}) or fix BROWSERQ_ARTIFACTS_URL")
            if code in ("403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
                return ConfigError(f"{doing}: {where} refused access ({code}): check the AWS_* "
                                   "credentials and the bucket's policy")
            return ConfigError(f"{doing}: {where} answered {code}: {error.get('Message') or exc}")
        return ConfigError(f"{doing}: {where} failed: {exc}")

    def check(self) -> None:
        """The bucket exists and these credentials may use it; else one ConfigError saying
        what to fix. A worker calls it at start, before it takes runs."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except (BotoCoreError, ClientError) as exc:
            raise self._problem(exc, "artifacts cannot be stored") from None

    # --- writing -------------------------------------------------------------------------------
    def write(self, run_id: str, name: str, data: bytes, *, content_type: str | None = None) -> StoredFile:
        """Put ``data`` as the object of ``<run_id>/<name>``, with its sha256 in the metadata.
        A store that fails (after botocore's retries) fails the step STORE_WRITE_FAILED."""
        from botocore.exceptions import BotoCoreError, ClientError

        relative = artifact_relative(run_id, name)
        stored = stored_file(relative, data, None)
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        try:
            self.client.put_object(
                Bucket=self.bucket, Key=self.key_of(relative), Body=data, ContentMD5=md5,
                ContentType=content_type or mimetypes.guess_type(name)[0] or "application/octet-stream",
                Metadata={"sha256": stored.sha256},
            )
        except (BotoCoreError, ClientError) as exc:
            raise StepFailed(
                Codes.STORE_WRITE_FAILED,
                f"could not store artifact {relative}: {self._problem(exc, 'upload failed')}",
            ) from None
        return stored

    def delete(self, relative: str) -> None:
        """Remove the artifact's object (S3 says nothing if it is gone) and this host's copy."""
        from botocore.exceptions import BotoCoreError, ClientError

        key = self.key_of(relative)
        try:
            self.client.delete_object(Bucket=self.bucket, Key=key)
        except (BotoCoreError, ClientError) as exc:
            raise self._problem(exc, f"cannot delete {self.location(relative)}") from None
        self.cache_dir.joinpath(*key.split("/")).unlink(missing_ok=True)

    # --- reading -------------------------------------------------------------------------------
    def read_bytes(self, relative: str, *, sha256: str | None = None) -> bytes:
        """The content of a stored artifact (through this host's cache)."""
        return self.local_path(relative, sha256=sha256).read_bytes()

    def local_path(self, relative: str, *, sha256: str | None = None) -> Path:
        """The artifact as a file on this host: the cached copy when it still matches the
        object's sha256 (``sha256``, else the object's metadata), else a fresh download.
        Raises FileNotFoundError when the object is missing, ConfigError when the store
        cannot be used, ValueError when the bytes do not match their sha256."""
        from botocore.exceptions import BotoCoreError, ClientError

        key = self.key_of(relative)
        cached = self.cache_dir.joinpath(*key.split("/"))
        try:
            if cached.is_file():
                expected = sha256 or self._recorded_sha256(key)
                if expected is not None and _sha256_of(cached) == expected:
                    return cached
            self._download(key, cached, sha256)
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code")) in ("404", "NoSuchKey", "NotFound"):
                raise FileNotFoundError(f"artifact {relative} is not in the store ({self.location(relative)})") from None
            raise self._problem(exc, f"cannot read {self.location(relative)}") from None
        except BotoCoreError as exc:
            raise self._problem(exc, f"cannot read {self.location(relative)}") from None
        return cached

    def _recorded_sha256(self, key: str) -> str | None:
        head = self.client.head_object(Bucket=self.bucket, Key=key)
        return (head.get("Metadata") or {}).get("sha256")

    def _download(self, key: str, target: Path, sha256: str | None) -> None:
        """Fetch the object into ``target`` atomically, checking its sha256 on the way."""
        answer = self.client.get_object(Bucket=self.bucket, Key=key)
        expected = sha256 or (answer.get("Metadata") or {}).get("sha256")
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        digest = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as handle:
                for chunk in answer["Body"].iter_chunks(_CHUNK):
                    digest.update(chunk)
                    handle.write(chunk)
            if expected is not None and digest.hexdigest() != expected:
                raise ValueError(f"s3://{self.bucket}/{key} has sha256 {digest.hexdigest()}, "
                                 f"expected {expected}: the object changed or is damaged")
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise


__all__ = ["S3Artifacts"]
