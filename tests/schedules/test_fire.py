"""Firing a slot goes through the producer: validated, recorded with the slot's key (secrets
encrypted), sent; a second fire of the same slot joins the run the first one recorded."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from browserq.errors import ParamError
from browserq.schedules.fire import fire
from browserq.schedules.load import Loaded, parse_schedules
from tests.conftest import TEST_SECRET_KEY, producer_env
from tests.support.redis import BROKER_DB, redis_url, wait_for_redis

REDIS = redis_url(BROKER_DB)
SLOT = datetime(2026, 1, 1, 12, 5, tzinfo=UTC)


@pytest.fixture
def queue(tmp_path: Path, templates_dir: Path) -> Iterator[str]:
    """This process as a producer: SQLite, the machine's Redis as broker, a queue nobody reads."""
    wait_for_redis(REDIS)
    name = f"bq_sched_{uuid.uuid4().hex[:8]}"
    env = {"BROWSERQ_DATABASE_URL": f"sqlite:///{tmp_path / 'fire.db'}", "BROWSERQ_BROKER_URL": REDIS,
           "BROWSERQ_TEMPLATES_DIR": str(templates_dir), "BROWSERQ_QUEUE": name,
           "BROWSERQ_SECRET_KEY": TEST_SECRET_KEY, "BROWSERQ_ARTIFACTS_DIR": str(tmp_path / "artifacts")}
    with producer_env(env):
        yield name
    redis.Redis.from_url(REDIS).delete(name)


def entry(body: str):
    loaded = parse_schedules(f"schedules:\n  - {body}\n", Loaded("s.yaml"))
    assert not loaded.problems, loaded.problems
    return loaded.schedules[0]


def test_a_slot_fired_twice_has_one_run(queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from browserq.celery_app import producer_services

    monkeypatch.setenv("SCHED_FIRE_PW", "pw-from-the-environment")
    login = entry("{name: nightly, template: login, params: {base_url: 'http://127.0.0.1:1/', "
                  "password: {env: SCHED_FIRE_PW}}, every: 5m}")
    first = fire(login, SLOT)
    again = fire(login, SLOT)
    assert not first.joined and again.joined and again.run_id == first.run_id
    assert first.key == "schedule:nightly:2026-01-01T12:05:00Z"
    later = fire(login, datetime(2026, 1, 1, 12, 10, tzinfo=UTC))
    assert not later.joined and later.run_id != first.run_id

    store = producer_services().store
    run = store.runs.get_run(first.run_id)
    assert run.status == "queued" and run.queue == queue and run.idempotency_key == first.key
    assert run.params["password"] == "[secret:password]" and run.template_name == "login"
    messages = redis.Redis.from_url(REDIS).lrange(queue, 0, -1)
    assert len(messages) == 2 and all(b"pw-from-the-environment" not in m for m in messages)


def test_an_entry_goes_to_its_own_queue_and_is_validated_like_any_run(queue: str) -> None:
    from browserq.celery_app import producer_services

    ping = entry(f"{{name: ping, template: ping, params: {{url: 'http://127.0.0.1:1/'}}, every: 5m, "
                 f"queue: {queue}-other}}")
    try:
        fired = fire(ping, SLOT)
        assert producer_services().store.runs.get_run(fired.run_id).queue == f"{queue}-other"
    finally:
        redis.Redis.from_url(REDIS).delete(f"{queue}-other")
    broken = entry("{name: broken, template: ping, params: {url: 'ftp://127.0.0.1/'}, every: 5m}")
    with pytest.raises(ParamError, match="param 'url'"):
        fire(broken, SLOT)
    assert producer_services().store.runs.find_run_by_idempotency_key("schedule:broken:2026-01-01T12:05:00Z") is None
