"""Fixtures of the session runtime's tests: real prefork workers (Redis or RabbitMQ broker, scratch
PostgreSQL) that this test process opens sessions on as their producer.

Imported by the test modules themselves (``from tests.sessions.session_fixtures import …``) so
they do not depend on a ``tests/sessions/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, producer_env
from tests.e2e.conftest import AMQP_URL, REDIS_URL, WorkerEnv, celery_worker, worker_env
from tests.support.templates import write_templates

#: The settings every session test worker runs with (small timeouts: failures come back fast).
SESSION_SETTINGS = {"BROWSERQ_SESSION_CAPACITY_RETRY_S": "2"}


@dataclass
class Fleet:
    """One real worker (and this process as its producer)."""

    config: WorkerEnv
    broker: str


@contextmanager
def session_fleet(tmp: Path, pg_url: str, broker: str, *, concurrency: int = 1,
                  **settings: str) -> Iterator[Fleet]:
    """A prefork worker on its own queue (``broker``: "redis" or "amqp"), ``settings`` added to its
    environment and to this producer's."""
    templates = write_templates(tmp / "templates", {}, copy_from=REPO / "templates")
    config = worker_env(tmp, pg_url, REDIS_URL if broker == "redis" else AMQP_URL, templates)
    config.env.update(SESSION_SETTINGS)
    config.env.update(settings)
    with producer_env(config.env), celery_worker(config, concurrency=concurrency):
        yield Fleet(config, broker)


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
