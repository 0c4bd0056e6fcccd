"""A producer process for the submit tests: this test process, a SQLite store of its own, a real
Redis broker and a queue nobody consumes (so every message sent can be read back)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from browserq.store import Store
from tests.conftest import REPO, TEST_SECRET_KEY, producer_env

REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclass
class Producer:
    queue: str
    store: Store

    def messages(self) -> list[dict[str, Any]]:
        """The messages waiting in the queue, oldest first: headers plus the decoded body."""
        raw = redis.Redis.from_url(REDIS_URL).lrange(self.queue, 0, -1)
        out = []
        for item in reversed(raw):  # kombu LPUSHes: the oldest is last
            message = json.loads(item)
            args, kwargs, _embed = json.loads(base64.b64decode(message["body"]))
            out.append({**message["headers"], "args": args, "kwargs": kwargs})
        return out


def producer_settings(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "BROWSERQ_DATABASE_URL": f"sqlite:///{tmp_path / 'producer.db'}",
        "BROWSERQ_BROKER_URL": REDIS_URL,
        "BROWSERQ_TEMPLATES_DIR": str(REPO / "templates"),
        "BROWSERQ_SECRET_KEY": TEST_SECRET_KEY,
        **extra,
    }


@pytest.fixture
def producer(tmp_path: Path) -> Iterator[Producer]:
    queue = f"bq_submit_test_{uuid.uuid4().hex[:8]}"
    env = producer_settings(tmp_path)
    with producer_env(env):
        store = Store(env["BROWSERQ_DATABASE_URL"])
        store.schema.upgrade()
        try:
            yield Producer(queue, store)
        finally:
            store.dispose()
            redis.Redis.from_url(REDIS_URL).delete(queue)
