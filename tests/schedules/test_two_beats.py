"""Two real ``browserq beat`` processes, one real worker, Redis and PostgreSQL: exactly one beat
fires, each slot of an ``every: 2s`` entry becomes exactly one run, and killing the lock holder
lets the standby take over without a gap or a duplicate."""

from __future__ import annotations

import itertools
import json
import signal
import sys
import uuid
from datetime import datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from browserq.demo.site import DemoSite
from tests.e2e.conftest import REDIS_URL, celery_worker, worker_env
from tests.schedules.conftest import TEMPLATES, write_schedules
from tests.support.polling import wait_until
from tests.support.processes import kill_group, stop
from tests.support.redis import delete_prefix, wait_for_redis
from tests.support.templates import write_templates
from tests.support.workers import read_log, spawn_logged, wait_for_log

pytestmark = pytest.mark.slow

INTERVAL_S = 2


def events(log: Path) -> list[dict]:
    """The JSON log events of a beat (Celery's own banner lines are not JSON)."""
    found = []
    for line in read_log(log).splitlines():
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                pass
    return found


def submitted(log: Path) -> list[str]:
    return [e["slot"] for e in events(log) if e.get("event") == "schedule slot submitted"]


def said(log: Path, event: str) -> bool:
    return any(e.get("event", "").startswith(event) for e in events(log))


def runs(pg_url: str, template: str) -> list[tuple[str, str]]:
    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("select idempotency_key, status from runs where template_name = :t"),
                                {"t": template}).all()
    finally:
        engine.dispose()
    return [(key, status) for key, status in rows]


def test_one_beat_fires_each_slot_once_and_a_standby_takes_over(
    tmp_path: Path, pg_url: str, site: DemoSite
) -> None:
    wait_for_redis(REDIS_URL)
    name = f"tick_{uuid.uuid4().hex[:8]}"
    templates = write_templates(tmp_path / "templates", {name: TEMPLATES["ping"]})
    config = worker_env(tmp_path, pg_url, REDIS_URL, templates)
    schedules = write_schedules(tmp_path, f"""
        schedules:
          - {{name: tick, template: {name}, params: {{url: "{site.url}/"}}, every: {INTERVAL_S}s}}
    """)
    env = {**config.env, "BROWSERQ_SCHEDULES_FILE": str(schedules), "BROWSERQ_BEAT_LOCK_TTL_S": "3",
           "BROWSERQ_LOG_FORMAT": "json"}
    beat = [sys.executable, "-m", "browserq.cli", "beat", "--loglevel", "INFO"]
    log_a, log_b = tmp_path / "beat-a.log", tmp_path / "beat-b.log"
    first = second = None
    try:
        with celery_worker(config):
            first = spawn_logged(beat, env, log_a)
            wait_for_log(first, log_a, lambda _: said(log_a, "beat lock taken"), 60, "beat A to take the lock")
            second = spawn_logged(beat, env, log_b)
            wait_for_log(second, log_b, lambda _: said(log_b, "beat on standby"), 60, "beat B to stand by")
            seen = len(submitted(log_a))
            wait_until(lambda: len(submitted(log_a)) >= seen + 2, 30, "beat A to fire two more slots")

            kill_group(first.pid, signal.SIGKILL)  # the holder dies without releasing the lock
            first.wait(10)
            wait_for_log(second, log_b, lambda _: said(log_b, "beat lock taken"), 30, "beat B to take over")
            wait_until(lambda: len(submitted(log_b)) >= 2, 30, "beat B to fire two slots")
            stop(second, 30)
            assert said(log_b, "beat lock released")

            fired_a, fired_b = submitted(log_a), submitted(log_b)
            recorded = runs(pg_url, name)
            wait_until(lambda: all(s == "completed" for _, s in runs(pg_url, name)), 120,
                       "the worker to complete every scheduled run")
    finally:
        for proc in (first, second):
            if proc is not None:
                stop(proc, 10, group=True)
        delete_prefix(REDIS_URL, f"browserq:beat-lock:{config.queue}")

    keys = [key for key, _ in recorded]
    assert all(key.startswith("schedule:tick:") for key in keys), keys
    assert len(set(keys)) == len(keys) == len(recorded)  # one run per slot, no run without its key
    slots = sorted(datetime.fromisoformat(key.removeprefix("schedule:tick:")) for key in keys)
    steps = {(b - a).total_seconds() for a, b in itertools.pairwise(slots)}
    assert steps == {INTERVAL_S}, f"slots not consecutive: {[s.isoformat() for s in slots]}"

    # exactly one beat fired each slot; B fired nothing while it stood by
    as_slots = lambda fired: {datetime.fromisoformat(s) for s in fired}  # noqa: E731
    assert not as_slots(fired_a) & as_slots(fired_b)
    assert as_slots(fired_a) | as_slots(fired_b) == set(slots)
    b_events = [e.get("event", "") for e in events(log_b)]
    taken = next(i for i, e in enumerate(b_events) if e.startswith("beat lock taken"))
    assert "schedule slot submitted" not in b_events[:taken]
    assert max(as_slots(fired_b)) > max(as_slots(fired_a))
    # taking over, B fired the slots of its catch-up window: those A had fired joined A's runs
    took_at = datetime.fromisoformat(next(e["timestamp"] for e in events(log_b)
                                          if e.get("event", "").startswith("beat lock taken")))
    window_s = 2 * 3
    joined = {datetime.fromisoformat(e["slot"]) for e in events(log_b)
              if e.get("event") == "schedule slot already has its run"}
    recent = {s for s in as_slots(fired_a) if (took_at - s).total_seconds() < window_s - 0.5}
    assert recent <= joined, (sorted(recent), sorted(joined))
