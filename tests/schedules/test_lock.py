"""The beat lock against the machine's Redis: one holder, standbys, takeover after a release or
after the holder stops renewing, and no firing without Redis."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from browserq.schedules.lock import BeatLock, Hold
from tests.support.polling import wait_until
from tests.support.redis import BROKER_DB, delete_prefix, redis_url, wait_for_redis

URL = redis_url(BROKER_DB)


@pytest.fixture
def key() -> Iterator[str]:
    wait_for_redis(URL)
    name = f"browserq:test-beat-lock:{uuid.uuid4().hex[:8]}"
    yield name
    delete_prefix(URL, name)


def test_one_beat_holds_the_lock_and_another_takes_over_when_it_is_released(key: str) -> None:
    first, second = BeatLock(URL, key, ttl_s=30), BeatLock(URL, key, ttl_s=30)
    assert first.hold() is Hold.ACQUIRED
    assert second.hold() is Hold.STANDBY
    assert first.hold() is Hold.HELD and second.hold() is Hold.STANDBY
    assert first.client.get(key) == first.token.encode()
    first.release()
    assert second.hold() is Hold.ACQUIRED
    assert first.hold() is Hold.STANDBY


def test_a_holder_that_stops_renewing_loses_the_lock_to_a_standby(key: str) -> None:
    stalled, standby = BeatLock(URL, key, ttl_s=0.5), BeatLock(URL, key, ttl_s=0.5)
    assert stalled.hold() is Hold.ACQUIRED
    assert standby.hold() is Hold.STANDBY
    wait_until(lambda: standby.hold() is Hold.ACQUIRED, 10, "the standby to take the expired lock")
    assert stalled.hold() is Hold.STANDBY  # it noticed: it fires nothing any more
    assert not stalled.holding and standby.holding
    stalled.release()  # not its lock: leaves the holder alone
    assert standby.client.get(key) == standby.token.encode()


def test_each_hold_renews_the_lock_to_its_full_ttl(key: str) -> None:
    holder, standby = BeatLock(URL, key, ttl_s=30), BeatLock(URL, key, ttl_s=30)
    assert holder.hold() is Hold.ACQUIRED
    holder.client.pexpire(key, 1000)  # as if most of the TTL had passed since the last renewal
    assert holder.hold() is Hold.HELD
    assert holder.client.pttl(key) > 20_000
    assert standby.hold() is Hold.STANDBY


def test_without_redis_a_beat_stands_by() -> None:
    lock = BeatLock("redis://127.0.0.1:1/0", "browserq:test-beat-lock:none", ttl_s=3)
    assert lock.hold() is Hold.STANDBY and not lock.holding
    lock.release()
