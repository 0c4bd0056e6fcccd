"""Fixtures of the session runtime's tests: real prefork workers (Redis or RabbitMQ broker, scratch
PostgreSQL) that this test process opens sessions on as their producer.

Imported by the test modules themselves (``from tests.sessions.session_fixtures import …``) so
they do not depend on a ``tests/sessions/conftest.py``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, producer_env
from tests.e2e.conftest import AMQP_URL, REDIS_URL, WorkerEnv, celery_worker, worker_env
from tests.support.processes import stop
from tests.support.templates import write_templates
from tests.support.workers import browserq_worker_argv, spawn_worker, wait_for_log

#: The settings every session test worker runs with (small timeouts: failures come back fast).
SESSION_SETTINGS = {"BROWSERQ_SESSION_CAPACITY_RETRY_S": "2"}


@dataclass
class Fleet:
    """One real worker (and this process as its producer)."""

    config: WorkerEnv
    broker: str


@contextmanager
def session_fleet(tmp: Path, pg_url: str, broker: str, *, concurrency: int = 1, pool: str = "prefork",
                  **settings: str) -> Iterator[Fleet]:
    """A worker on its own queue (``broker``: "redis" or "amqp"; ``pool``: "prefork" or
    "threads"), ``settings`` added to its environment and to this producer's."""
    templates = write_templates(tmp / "templates", {}, copy_from=REPO / "templates")
    config = worker_env(tmp, pg_url, REDIS_URL if broker == "redis" else AMQP_URL, templates)
    config.env.update(SESSION_SETTINGS)
    config.env.update(settings)
    worker = celery_worker(config, concurrency=concurrency) if pool == "prefork" else threads_worker(config)
    with producer_env(config.env), worker:
        yield Fleet(config, broker)


@contextmanager
def threads_worker(config: WorkerEnv) -> Iterator[subprocess.Popen]:
    """``browserq worker --pool threads -c 1``: one process, its one runtime shared by its threads."""
    proc = spawn_worker(browserq_worker_argv(config.queue, extra=("--pool", "threads")), config.env, config.log)
    try:
        wait_for_log(proc, config.log, lambda text: "ready." in text, 120, "the threads worker to start")
        yield proc
    finally:
        stop(proc, 60, group=True)


@pytest.fixture(name="fleet", scope="module", params=["redis", "amqp"])
def fleet_fixture(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[Fleet]:
    """One worker process (-c 1) on each broker in turn."""
    with session_fleet(tmp_path_factory.mktemp(f"sessions-{request.param}"), pg_url, request.param) as running:
        yield running


@pytest.fixture(name="redis_fleet", scope="module")
def redis_fleet_fixture(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[Fleet]:
    """One worker process (-c 1) on Redis."""
    with session_fleet(tmp_path_factory.mktemp("sessions-redis"), pg_url, "redis") as running:
        yield running


__all__ = ["Fleet", "fleet_fixture", "redis_fleet_fixture", "session_fleet"]
