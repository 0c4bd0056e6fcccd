"""S3Artifacts against a real S3-compatible server (moto's, over HTTP): what is put, what a
reader on another host gets, the guards it shares with ArtifactDir, and the errors of a store
that cannot be used. Also the forms of BROWSERQ_ARTIFACTS_URL and the store each one picks."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import pytest

from browserq.errors import Codes, ConfigError, StepFailed
from browserq.execute.runtime import Runtime
from browserq.settings import load_settings
from browserq.store import ArtifactDir, ArtifactPathDenied
from browserq.store.artifacts import artifact_store
from browserq.store.s3 import S3Artifacts
from tests.conftest import make_settings
from tests.support import REPO
from tests.support.s3 import S3_ENV, free_port
from tests.support.workers import browserq_env


def s3_client(endpoint: str):
    return boto3.client("s3", endpoint_url=endpoint)


@pytest.fixture
def bucket(s3_endpoint: str) -> str:
    name = f"bq-{uuid.uuid4().hex[:12]}"
    s3_client(s3_endpoint).create_bucket(Bucket=name)
    return name


@pytest.fixture
def store(s3_endpoint: str, bucket: str, tmp_path: Path) -> S3Artifacts:
    return S3Artifacts(bucket, "runs/prod", local_dir=tmp_path / "host-a", endpoint_url=s3_endpoint)


def test_write_puts_one_object_with_content_type_and_sha256(store: S3Artifacts, s3_endpoint: str, bucket: str) -> None:
    data = b"\x89PNG not really"
    stored = store.write("run1", "shots/first.png", data, content_type="image/png")
    assert stored.path == "run1/shots/first.png" and stored.size == len(data) and stored.absolute is None
    assert stored.sha256 == hashlib.sha256(data).hexdigest()
    head = s3_client(s3_endpoint).head_object(Bucket=bucket, Key="runs/prod/run1/shots/first.png")
    assert head["ContentType"] == "image/png"
    assert head["Metadata"] == {"sha256": stored.sha256}
    assert store.location(stored.path) == f"s3://{bucket}/runs/prod/run1/shots/first.png"
    assert not (store.local_dir).exists()  # writing leaves nothing on the worker's disk


def test_a_reader_on_another_host_downloads_into_its_cache_once(
    store: S3Artifacts, s3_endpoint: str, bucket: str, tmp_path: Path
) -> None:
    stored = store.write("run1", "trace.zip", b"zip bytes" * 1000)
    other = S3Artifacts(bucket, "runs/prod", local_dir=tmp_path / "host-b", endpoint_url=s3_endpoint)
    path = other.local_path(stored.path)
    assert path == tmp_path / "host-b" / ".cache" / "s3" / bucket / "runs" / "prod" / "run1" / "trace.zip"
    assert path.read_bytes() == b"zip bytes" * 1000
    assert other.read_bytes(stored.path) == b"zip bytes" * 1000
    # With the recorded sha256 a matching cached copy needs no store at all: the object is gone
    # and the copy is still served; without it, the store is asked (and says it is gone).
    s3_client(s3_endpoint).delete_object(Bucket=bucket, Key="runs/prod/run1/trace.zip")
    assert other.local_path(stored.path, sha256=stored.sha256) == path
    with pytest.raises(FileNotFoundError, match=r"run1/trace\.zip"):
        other.local_path(stored.path)


def test_a_damaged_cached_copy_is_fetched_again(store: S3Artifacts, tmp_path: Path) -> None:
    stored = store.write("run1", "failure.html", b"<html>the page</html>")
    path = store.local_path(stored.path)
    path.write_bytes(b"<html>truncat")
    assert store.read_bytes(stored.path) == b"<html>the page</html>"
    path.write_bytes(b"<html>truncat")
    assert store.local_path(stored.path, sha256=stored.sha256).read_bytes() == b"<html>the page</html>"
    assert [p.name for p in path.parent.iterdir()] == ["failure.html"]  # no temp file left


def test_an_object_that_does_not_match_the_recorded_sha256_is_refused(store: S3Artifacts) -> None:
    first = store.write("run1", "dom.html", b"first")
    store.write("run1", "dom.html", b"second")  # a later attempt wrote the same name
    with pytest.raises(ValueError, match="sha256"):
        store.local_path(first.path, sha256=first.sha256)
    assert store.read_bytes(first.path) == b"second"  # without a recorded sha256: the object's own


@pytest.mark.parametrize("name", ["../evil", "/etc/passwd", "a/../../evil", "", ".", "a\\..\\b", "nul\x00", "C:/x", "dir/"])
def test_names_cannot_escape_the_prefix(store: S3Artifacts, s3_endpoint: str, bucket: str, name: str) -> None:
    with pytest.raises(ArtifactPathDenied) as caught:
        store.write("run", name, b"x")
    assert caught.value.code is Codes.PATH_DENIED
    assert s3_client(s3_endpoint).list_objects_v2(Bucket=bucket).get("KeyCount") == 0


@pytest.mark.parametrize("run_id", ["..", "../x", "a/b", "", "/abs"])
def test_run_ids_are_one_component(store: S3Artifacts, run_id: str) -> None:
    with pytest.raises(ValueError):
        store.write(run_id, "x.png", b"x")
    with pytest.raises(ValueError):
        store.scratch_dir(run_id)


def test_reading_refuses_escaping_paths(store: S3Artifacts) -> None:
    for bad in ("../x", "/etc/passwd", "run/../../x"):
        with pytest.raises(ValueError):
            store.local_path(bad)


# --- a store that cannot be used ------------------------------------------------------------------
def test_a_missing_bucket_is_one_clear_error(s3_endpoint: str, tmp_path: Path) -> None:
    missing = S3Artifacts("no-such-bucket-here", local_dir=tmp_path, endpoint_url=s3_endpoint)
    with pytest.raises(ConfigError, match="bucket 'no-such-bucket-here' does not exist") as caught:
        missing.check()
    assert "create it" in str(caught.value)


def test_an_unreachable_endpoint_is_one_clear_error(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    away = S3Artifacts("some-bucket", local_dir=tmp_path, endpoint_url=endpoint)
    with pytest.raises(ConfigError, match="cannot reach the artifact store s3://some-bucket") as caught:
        away.check()
    assert endpoint in str(caught.value) and "BROWSERQ_S3_ENDPOINT_URL" in str(caught.value)
    with pytest.raises(StepFailed) as failed:  # a write while the store is away fails its step
        away.write("run", "x.png", b"x")
    assert failed.value.code is Codes.STORE_WRITE_FAILED and "cannot reach" in failed.value.message
    with pytest.raises(ConfigError, match="cannot reach"):
        away.local_path("run/x.png")


def test_a_runtime_refuses_to_start_on_a_store_it_cannot_use(tmp_path: Path, s3_endpoint: str) -> None:
    settings = make_settings(tmp_path, artifacts_url="s3://no-such-bucket-here/p", s3_endpoint_url=s3_endpoint)
    runtime = Runtime(settings)
    try:
        with pytest.raises(ConfigError, match="does not exist"):
            runtime.start()
        assert runtime.pool.pid is None  # refused before any browser was launched
    finally:
        runtime.stop()


def test_browserq_worker_refuses_to_start_with_one_line(tmp_path: Path) -> None:
    env = browserq_env({
        "BROWSERQ_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}",
        "BROWSERQ_ARTIFACTS_URL": "s3://some-bucket/runs",
        "BROWSERQ_S3_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
        **S3_ENV,
    })
    done = subprocess.run([sys.executable, "-m", "browserq.cli", "worker"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done
    assert done.stderr.startswith("error: artifacts cannot be stored: cannot reach the artifact store")
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 3  # one (wrapped) line


# --- BROWSERQ_ARTIFACTS_URL -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (None, ("dir", "default")),
        ("", ("dir", "default")),
        ("/srv/artifacts", ("dir", "/srv/artifacts")),
        ("file:///srv/artifacts", ("dir", "/srv/artifacts")),
        ("s3://my-bucket", ("s3", "s3://my-bucket/R/x.png")),
        ("s3://my-bucket/a/b/", ("s3", "s3://my-bucket/a/b/R/x.png")),
    ],
)
def test_the_url_picks_the_store(tmp_path: Path, url: str | None, expected: tuple[str, str]) -> None:
    settings = load_settings(artifacts_dir=tmp_path / "default", artifacts_url=url)
    store = artifact_store(settings)
    kind, where = expected
    if kind == "dir":
        assert isinstance(store, ArtifactDir)
        assert store.base == (tmp_path / "default" if where == "default" else Path(where))
    else:
        assert isinstance(store, S3Artifacts) and store.location("R/x.png") == where
        assert store.scratch_dir("R").is_relative_to(tmp_path / "default" / ".cache")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("gs://bucket/x", "use a directory (/srv/artifacts), file:///srv/artifacts or s3://bucket/prefix"),
        ("s3://", "is not a bucket name"),
        ("s3://Upper_Case", "is not a bucket name"),
        ("s3://bucket/a/../b", "key prefix"),
        ("s3://bucket/x?region=eu", "s3://bucket/prefix only"),
        ("file://otherhost/srv", "absolute path on this host"),
    ],
)
def test_other_forms_are_refused_when_the_settings_load(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match="BROWSERQ_ARTIFACTS_URL") as caught:
        load_settings(artifacts_url=url)
    assert says in str(caught.value)


def test_credentials_in_the_url_are_refused_and_not_echoed() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(artifacts_url="s3://AKIAKEY:very-secret@bucket/p")
    assert "very-secret" not in str(caught.value) and "AWS_" in str(caught.value)


def test_delete_removes_the_object_and_the_cached_copy(store: S3Artifacts, s3_endpoint: str, bucket: str) -> None:
    stored = store.write(".doctor", "probe", b"probe")
    cached = store.local_path(stored.path)
    store.delete(stored.path)
    assert not cached.exists()
    assert s3_client(s3_endpoint).list_objects_v2(Bucket=bucket).get("KeyCount") == 0
    store.delete(stored.path)  # gone already: no error
