"""Fixtures for the limits tests: a real Redis (DB 8) with a fresh key prefix per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tests.support.redis import LIMITS_DB, delete_prefix, wait_for_redis
from tests.support.redis import redis_url as database_url

REDIS_URL = os.environ.get("BROWSERQ_TEST_LIMITS_REDIS_URL", database_url(LIMITS_DB))


@pytest.fixture(scope="session")
def redis_url() -> str:
    wait_for_redis(REDIS_URL)  # another suite may be restarting the shared Redis right now
    return REDIS_URL


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    """A key prefix no other test uses; its keys are deleted afterwards."""
    value = f"test:limits:{uuid.uuid4().hex[:12]}:"
    yield value
    delete_prefix(redis_url, value)
