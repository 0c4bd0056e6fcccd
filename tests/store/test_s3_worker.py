"""End to end: ``run_template.delay`` → Redis → a real prefork Celery worker whose artifacts go to
an S3-compatible bucket → the failed run's snapshot and trace are objects whose sha256 is the
one PostgreSQL recorded, and the worker's own disk keeps none of them."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from browserq.errors import RunFailed
from tests.conftest import producer_env
from tests.e2e.conftest import REDIS_URL, WorkerEnv, celery_worker, worker_env
from tests.support.s3 import S3_ENV
from tests.support.templates import write_templates

pytestmark = pytest.mark.slow

PREFIX = "e2e"
FAILS = """
params:
  url: {type: url, required: true}
settings: {trace: on_failure, step_timeout_s: 10, run_retries: 0}
steps:
  - {action: navigate, url: "${url}", retries: 1}
  - {action: click, selector: "#never-there", timeout_s: 1, retries: 1}
"""


@pytest.fixture(scope="module")
def s3_worker(tmp_path_factory: pytest.TempPathFactory, pg_url: str, s3_endpoint: str) -> Iterator[tuple[WorkerEnv, str]]:
    tmp = tmp_path_factory.mktemp("s3-e2e")
    bucket = f"bq-e2e-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=bucket)
    config = worker_env(tmp, pg_url, REDIS_URL, write_templates(tmp / "templates", {"s3_fails": FAILS}))
    config.env.update({"BROWSERQ_ARTIFACTS_URL": f"s3://{bucket}/{PREFIX}", "BROWSERQ_S3_ENDPOINT_URL": s3_endpoint,
                       **S3_ENV})
    with producer_env(config.env), celery_worker(config, concurrency=1):
        yield config, bucket


def test_a_worker_stores_a_failed_runs_artifacts_in_the_bucket(
    s3_worker: tuple[WorkerEnv, str], site, pg_url: str, s3_endpoint: str
) -> None:
    from browserq import run_template
    from browserq.store import Store

    config, bucket = s3_worker
    result = run_template.delay("s3_fails", params={"url": f"{site.url}/quotes/"})
    outcome = result.get(timeout=180, propagate=False)
    assert isinstance(outcome, RunFailed) and outcome.code == "SELECTOR_NOT_FOUND", outcome
    store = Store(pg_url)
    try:
        rows = store.steps.artifacts(result.id)
    finally:
        store.dispose()
    assert {a.kind for a in rows} >= {"failure_screenshot", "dom", "console", "network", "trace"}
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    for row in rows:
        got = client.get_object(Bucket=bucket, Key=f"{PREFIX}/{row.path}")
        assert hashlib.sha256(got["Body"].read()).hexdigest() == row.sha256 == got["Metadata"]["sha256"]
    local = Path(config.env["BROWSERQ_ARTIFACTS_DIR"])
    assert not local.exists() or [p for p in local.rglob("*") if p.is_file()] == []
