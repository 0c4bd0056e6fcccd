"""A SQLite store per test and a finished run's webhook event on it: what the delivery tests POST."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from browserq.store import Store
from tests.store.helpers import new_run


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store(f"sqlite:///{tmp_path / 'hooks.db'}")
    store.schema.upgrade()
    yield store
    store.dispose()


def completed_event(store: Store, url: str) -> int:
    """A run notifying ``url`` completes: the id of its one webhook delivery."""
    run_id = new_run(store, notify_url=url)
    lease = store.leases.acquire_lease(run_id, owner="w1", ttl_s=30)
    store.transitions.finish_run(run_id, status="completed", outputs={}, token=lease.token)
    [delivery] = store.webhooks.webhook_deliveries(run_id)
    return delivery.id
