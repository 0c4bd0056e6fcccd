"""Fixtures for the limits tests: a real Redis (DB 8) with a fresh key prefix per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import redis

REDIS_URL = os.environ.get("BROWSERQ_TEST_LIMITS_REDIS_URL", "redis://127.0.0.1:6379/8")


@pytest.fixture(scope="session")
def redis_url() -> str:
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    for _ in range(20):  # another suite may be restarting the shared Redis right now
        try:
            client.ping()
            break
        except redis.ConnectionError:
            import time

            time.sleep(0.5)
    else:
        pytest.fail(f"Redis at {REDIS_URL} is not reachable")
    return REDIS_URL


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    """A key prefix no other test uses; its keys are deleted afterwards."""
    value = f"test:limits:{uuid.uuid4().hex[:12]}:"
    yield value
    try:
        client = redis.Redis.from_url(redis_url)
        keys = list(client.scan_iter(match=value + "*"))
        if keys:
            client.delete(*keys)
    except redis.RedisError:
        pass
