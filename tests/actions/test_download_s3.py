"""A download kept in an S3-compatible bucket (moto's server on 127.0.0.1), then uploaded from
there: the bytes go through the journal's artifact store, none stay on the worker's disk."""

from __future__ import annotations

import hashlib
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from browserq.execute.runtime import Runtime
from tests.actions.file_site import CSV, CSV_SHA256, ECHOED, serve_file_site
from tests.conftest import make_settings, template
from tests.support.s3 import s3_with_credentials


@pytest.fixture(scope="module")
def file_site() -> Iterator[str]:
    yield from serve_file_site()


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, str, str]]:
    """A runtime whose artifacts go to a fresh bucket: (runtime, endpoint, bucket)."""
    with s3_with_credentials(tmp_path_factory.mktemp("moto") / "moto.log") as endpoint:
        bucket = f"bq-files-{uuid.uuid4().hex[:8]}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
        settings = make_settings(tmp_path_factory.mktemp("s3-files"), artifacts_url=f"s3://{bucket}/runs",
                                 s3_endpoint_url=endpoint)
        runtime = Runtime(settings).start()
        try:
            yield runtime, endpoint, bucket
        finally:
            runtime.stop()


def test_a_download_goes_to_the_bucket_and_is_uploaded_from_it(s3: tuple[Runtime, str, str], file_site: str) -> None:
    runtime, endpoint, bucket = s3
    loaded = template(textwrap.dedent(f"""
        steps:
          - {{action: navigate, url: "{file_site}/"}}
          - {{action: download, selector: "#csv", into: report}}
          - {{action: navigate, url: "{file_site}/form"}}
          - {{action: upload, selector: "#one", file: "${{outputs.report}}"}}
        """) + ECHOED.lstrip("\n"))
    outcome = runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    report = outcome.outputs["report"]
    body = boto3.client("s3", endpoint_url=endpoint).get_object(Bucket=bucket, Key=f"runs/{report['artifact']}")
    data = body["Body"].read()
    assert data == CSV and hashlib.sha256(data).hexdigest() == CSV_SHA256 == report["sha256"]
    assert outcome.outputs["echoed"] == [{"name": "one:report.csv", "size": str(len(CSV)), "sha256": CSV_SHA256}]
    local = Path(runtime.settings.artifacts_dir) / outcome.run_id / "downloads"
    assert not local.exists() or not [p for p in local.rglob("*") if p.is_file()]
