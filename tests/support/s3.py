"""A real S3-compatible server on 127.0.0.1 for the object-store artifact tests: moto's
standalone server (``moto[server]``, a dev dependency) in a subprocess of its own.

Why a server and not a mocked client: browserq talks to it over HTTP with boto3 exactly as it
would to MinIO or AWS (signatures, path-style addressing, metadata headers, errors), and worker
subprocesses reach the same server. moto accepts any credentials; :data:`S3_ENV` is what the
tests give both this process and the workers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.http import free_port
from tests.support.polling import wait_until

#: Credentials and region for the moto server (it accepts any): set for boto3 in every process.
S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/moto-api/", timeout=2):
            return True
    except OSError:
        return False


@contextmanager
def moto_server(log: Path) -> Iterator[str]:
    """Start ``python -m moto.server`` on a free port of 127.0.0.1; yield its endpoint URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("ab") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=handle, stderr=subprocess.STDOUT, env={**os.environ, **S3_ENV}, start_new_session=True,
        )
    try:
        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"moto server exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
            return _answers(url)

        wait_until(ready, 60, "the moto S3 server to answer", interval_s=0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextmanager
def s3_with_credentials(log: Path) -> Iterator[str]:
    """:func:`moto_server`, with :data:`S3_ENV` in this process's environment while it runs (boto3
    reads credentials there, as from any AWS_* setup); the environment is put back after."""
    saved = {key: os.environ.get(key) for key in S3_ENV}
    os.environ.update(S3_ENV)
    try:
        with moto_server(log) as url:
            yield url
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
