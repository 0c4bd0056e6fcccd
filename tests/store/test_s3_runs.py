"""Runs whose artifacts go to an S3-compatible bucket (BROWSERQ_ARTIFACTS_URL=s3://bucket/prefix):
a failing run, executed in this process, leaves its snapshot, its screenshot and its trace in the
bucket and nothing on the worker's disk; a second host (another artifacts_dir, the same database
and URL) shows them as s3:// locations and gets the trace as a local file to open."""

from __future__ import annotations

import hashlib
import io
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from browserq.execute.runtime import Runtime
from browserq.settings import Settings
from browserq.store.artifacts import artifact_store
from tests.conftest import make_settings, template
from tests.support import REPO
from tests.support.cli_zygote import browserq_command
from tests.support.s3 import S3_ENV
from tests.support.workers import browserq_env

PREFIX = "fleet/prod"


@pytest.fixture(scope="module")
def bucket(s3_endpoint: str) -> str:
    name = f"bq-runs-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="module")
def s3_runtime(tmp_path_factory: pytest.TempPathFactory, s3_endpoint: str, bucket: str) -> Iterator[Runtime]:
    settings = make_settings(
        tmp_path_factory.mktemp("s3-worker"), artifacts_url=f"s3://{bucket}/{PREFIX}", s3_endpoint_url=s3_endpoint
    )
    runtime = Runtime(settings).start()
    yield runtime
    runtime.stop()


def failing_run(runtime: Runtime, site_url: str) -> str:
    """A run that takes a screenshot, retries a step (so it is traced) and fails: snapshot + trace."""
    flaky = f"{site_url}/flaky?key={uuid.uuid4().hex}&fail=1"  # 500 once, then 200
    loaded = template(
        f"""
        settings: {{trace: on_failure, step_timeout_s: 30}}
        steps:
          - {{action: navigate, url: "{flaky}", retries: 1}}
          - {{action: screenshot, name: "pages/first.png"}}
          - {{action: click, selector: "#never-there", timeout_s: 1, retries: 0}}
        """
    )
    outcome = runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "SELECTOR_NOT_FOUND"), outcome
    return outcome.run_id


def files_under(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file()) if directory.exists() else []


def test_a_failed_run_leaves_its_artifacts_in_the_bucket_and_none_on_disk(
    s3_runtime: Runtime, demo, s3_endpoint: str, bucket: str
) -> None:
    run_id = failing_run(s3_runtime, demo.url)
    rows = s3_runtime.store.steps.artifacts(run_id)
    assert {a.kind for a in rows} == {"screenshot", "failure_screenshot", "dom", "console", "network", "trace"}
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    listed = client.list_objects_v2(Bucket=bucket, Prefix=f"{PREFIX}/{run_id}/")["Contents"]
    assert sorted(o["Key"] for o in listed) == sorted(f"{PREFIX}/{a.path}" for a in rows)
    for row in rows:
        got = client.get_object(Bucket=bucket, Key=f"{PREFIX}/{row.path}")
        body = got["Body"].read()
        assert hashlib.sha256(body).hexdigest() == row.sha256 == got["Metadata"]["sha256"], row.path
        assert len(body) == row.size > 0 and got["ContentType"] == row.content_type
    zipped = client.get_object(Bucket=bucket, Key=f"{PREFIX}/{run_id}/trace.zip")["Body"].read()
    with zipfile.ZipFile(io.BytesIO(zipped)) as trace:
        assert any(name.endswith(".trace") for name in trace.namelist())
    # Nothing of the run stays on the worker's disk: no artifact, no trace chunk, no scratch folder.
    local = s3_runtime.settings.artifacts_dir
    assert files_under(local) == []
    assert not (local / run_id).exists() and not (local / ".cache" / "scratch" / run_id).exists()


def second_host(runtime: Runtime, tmp: Path) -> Settings:
    """The same database and artifacts URL, another (empty) artifacts_dir: another machine."""
    return runtime.settings.model_copy(update={"artifacts_dir": tmp / "host-b-artifacts"})


def test_a_second_host_shows_s3_locations_and_opens_the_trace(
    s3_runtime: Runtime, demo, tmp_path: Path, bucket: str
) -> None:
    run_id = failing_run(s3_runtime, demo.url)
    other = second_host(s3_runtime, tmp_path)
    env = browserq_env({
        "BROWSERQ_DATABASE_URL": other.database_url,
        "BROWSERQ_ARTIFACTS_URL": str(other.artifacts_url),
        "BROWSERQ_S3_ENDPOINT_URL": str(other.s3_endpoint_url),
        "BROWSERQ_ARTIFACTS_DIR": str(other.artifacts_dir),
        **S3_ENV,
    })
    shown = browserq_command(["show", run_id], env=env, cwd=REPO, timeout=120)
    assert shown.returncode == 0, shown.stderr
    rows = s3_runtime.store.steps.artifacts(run_id)
    section = shown.stdout.split("\nArtifacts\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert sorted(line.split("\t")[-1] for line in section) == sorted(
        f"s3://{bucket}/{PREFIX}/{a.path}" for a in rows)

    trace = next(a for a in rows if a.kind == "trace")
    path = artifact_store(other).local_path(trace.path, sha256=trace.sha256)
    assert path.is_relative_to(other.artifacts_dir / ".cache")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == trace.sha256
    with zipfile.ZipFile(path) as archive:  # what `playwright show-trace PATH` opens
        assert any(name.endswith(".trace") for name in archive.namelist())
    dom = next(a for a in rows if a.kind == "dom")
    assert b"<html" in artifact_store(other).read_bytes(dom.path).lower()


def test_a_bucket_gone_while_the_worker_runs_fails_the_screenshot_step_clearly(
    s3_runtime: Runtime, demo, s3_endpoint: str
) -> None:
    """The check at start passed; then the bucket is deleted: the step that stores an artifact
    fails STORE_WRITE_FAILED saying what is wrong, the run ends failed (nothing left running)."""
    from browserq.store.s3 import S3Artifacts

    gone = f"bq-gone-{uuid.uuid4().hex[:8]}"
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    client.create_bucket(Bucket=gone)
    runner = s3_runtime.runner
    kept = runner.artifacts
    runner.artifacts = S3Artifacts(gone, local_dir=s3_runtime.settings.artifacts_dir, endpoint_url=s3_endpoint)
    client.delete_bucket(Bucket=gone)
    try:
        loaded = template(
            f"""
            settings: {{trace: off, run_retries: 0}}
            steps:
              - {{action: navigate, url: "{demo.url}/quotes/"}}
              - {{action: screenshot, name: shot.png, retries: 0}}
            """
        )
        outcome = s3_runtime.run_loaded(loaded)
    finally:
        runner.artifacts = kept
    assert (outcome.status, outcome.error_code, outcome.error_step_path) == ("failed", "STORE_WRITE_FAILED", "1")
    assert f"bucket '{gone}' does not exist" in (outcome.error_message or "")
    assert s3_runtime.store.runs.get_run(outcome.run_id).status == "failed"
    assert s3_runtime.store.steps.artifacts(outcome.run_id) == []


def test_prune_deletes_a_runs_objects_from_the_bucket(s3_runtime: Runtime, demo, s3_endpoint: str, bucket: str) -> None:
    from datetime import timedelta

    from browserq.execute.retention import prune_runs
    from browserq.store.models import utcnow

    run_id = failing_run(s3_runtime, demo.url)
    client = boto3.client("s3", endpoint_url=s3_endpoint)

    def objects() -> list[str]:
        listed = client.list_objects_v2(Bucket=bucket, Prefix=f"{PREFIX}/{run_id}")
        return [o["Key"] for o in listed.get("Contents", [])]

    assert len(objects()) == len(s3_runtime.store.steps.artifacts(run_id)) >= 5
    report = prune_runs(
        s3_runtime.store, s3_runtime.artifacts, older_than=timedelta(days=30), now=utcnow() + timedelta(days=31)
    )
    assert report.runs >= 1 and s3_runtime.store.runs.get_run(run_id) is None
    assert objects() == []
