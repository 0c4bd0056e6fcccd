"""Retention (browserq/execute/retention.py): real runs on real Chromium, then a prune.

Every table about a run is found from the SQLAlchemy metadata here (a ``run_id`` column, or a
foreign key to such a table), so a table added later is checked without touching this test.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from celery import Celery
from sqlalchemy import Table, create_engine, text, update

from browserq.errors import ConfigError
from browserq.execute.export import export_run
from browserq.execute.retention import parse_duration, prunable_statuses, prune_runs
from browserq.execute.runtime import Runtime
from browserq.execute.sweeper import FleetSweeper
from browserq.metrics import definitions as metrics
from browserq.store import normalize_url
from browserq.store.models import Base, Run, utcnow
from browserq.tasks.retention import prune_expired, result_forgetter
from tests.conftest import make_settings, template
from tests.support.postgres import create_database, drop_database, scratch_name
from tests.support.redis import BROKER_DB, redis_url, wait_for_redis

LATER = timedelta(days=31)  # "now" for the prune: every run of the test finished 31 days ago


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
def any_runtime(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runtime]:
    """A runtime of this module's own (its runs notify a webhook, so it has a signing secret)."""
    tmp = tmp_path_factory.mktemp(f"retention-{request.param}")
    name = scratch_name("browserq_retention") if request.param == "postgresql" else None
    url = create_database(name) if name else f"sqlite:///{tmp / 'browserq.db'}"
    runtime = Runtime(
        make_settings(tmp, database_url=url, webhook_secret="retention-test-secret")
    ).start()
    yield runtime
    runtime.stop()
    if name:
        drop_database(name)


def _tables_about_runs() -> dict[str, tuple[Table, str]]:
    """Each table with rows about a run → (table, how to select them: a SQL condition on :ids)."""
    found: dict[str, tuple[Table, str]] = {}
    for table in Base.metadata.sorted_tables:
        if table.name == "runs":
            found["runs"] = (table, "id IN :ids")
        elif "run_id" in table.c:
            found[table.name] = (table, "run_id IN :ids")
    for table in Base.metadata.sorted_tables:  # children of those without a run_id of their own
        for fk in table.foreign_keys:
            parent = fk.column.table.name
            if table.name not in found and parent in found and parent != "runs":
                cond = found[parent][1]
                found[table.name] = (
                    table,
                    f"{fk.parent.name} IN (SELECT {fk.column.name} FROM {parent} WHERE {cond})",
                )
    return found


def _rows(runtime: Runtime, run_ids: list[str]) -> dict[str, int]:
    from sqlalchemy import bindparam

    engine = create_engine(normalize_url(runtime.settings.database_url))
    try:
        with engine.connect() as conn:
            return {
                name: conn.execute(
                    text(f"SELECT count(*) FROM {name} WHERE {cond}").bindparams(
                        bindparam("ids", expanding=True)
                    ),
                    {"ids": run_ids},
                ).scalar_one()
                for name, (_table, cond) in _tables_about_runs().items()
            }
    finally:
        engine.dispose()


def _real_runs(runtime: Runtime, demo) -> tuple[str, str]:
    shot = template(
        f"""
        steps:
          - {{action: navigate, url: "{demo.url}/"}}
          - {{action: screenshot, name: "shot.png"}}
        """
    )
    broken = template(
        f"""
        settings: {{step_timeout_s: 5}}
        steps:
          - {{action: navigate, url: "{demo.url}/"}}
          - {{action: click, selector: "#never-there", timeout_s: 1, retries: 0}}
        """
    )
    done = runtime.run_loaded(shot, notify="https://hooks.example.com/T0/secret-path")
    failed = runtime.run_loaded(broken, notify="https://hooks.example.com/T0/secret-path")
    assert (done.status, failed.status) == ("completed", "failed")
    return done.run_id, failed.run_id


def _set_status(runtime: Runtime, run_id: str, status: str) -> None:
    engine = create_engine(normalize_url(runtime.settings.database_url))
    with engine.begin() as conn:
        conn.execute(update(Run).where(Run.id == run_id).values(status=status))
    engine.dispose()


def test_prune_deletes_finished_runs_with_every_row_file_and_result(
    any_runtime: Runtime, demo
) -> None:
    runtime = any_runtime
    done, failed = _real_runs(runtime, demo)
    kept_review, kept_running = _real_runs(runtime, demo)
    _set_status(runtime, kept_review, "needs_review")  # finished long ago, but a person must decide
    _set_status(runtime, kept_running, "running")
    pruned = [done, failed]
    files = [
        runtime.settings.artifacts_dir / a.path for r in pruned for a in runtime.store.steps.artifacts(r)
    ]
    assert files and all(f.exists() for f in files)
    before = _rows(runtime, pruned)
    assert (
        before["step_attempts"]
        and before["artifacts"]
        and before["run_transitions"]
        and before["webhook_deliveries"]
    )
    backend = Celery("t", set_as_current=False)
    backend.conf.result_backend = runtime.settings.effective_result_backend
    for run_id in (*pruned, kept_review):
        backend.backend.store_result(
            runtime.store.runs.get_run(run_id).task_id or run_id, {"ok": 1}, "SUCCESS"
        )

    dry = prune_runs(
        runtime.store,
        runtime.artifacts,
        older_than=timedelta(days=30),
        dry_run=True,
        now=utcnow() + LATER,
    )
    assert (
        dry.by_status["completed"] >= 1 and dry.by_status["failed"] >= 1 and dry.artifact_bytes > 0
    )
    assert _rows(runtime, pruned) == before and all(f.exists() for f in files)  # dry: nothing went

    counted = metrics.PRUNED.labels("runs")._value.get()
    report = prune_runs(
        runtime.store,
        runtime.artifacts,
        older_than=timedelta(days=30),
        now=utcnow() + LATER,
        batch_size=1,
        forget=result_forgetter(runtime.settings),
        pruned=metrics.pruned,  # the worker's meter (browserq.tasks.observers.retention_meter)
    )
    assert report.runs >= 2 and report.rows >= sum(before.values())
    assert metrics.PRUNED.labels("runs")._value.get() - counted == report.runs
    assert _rows(runtime, pruned) == {name: 0 for name in before}
    assert not any(f.exists() for f in files)
    folders = [runtime.settings.artifacts_dir / r for r in pruned]
    assert not any(f.exists() for f in folders)  # their folders too
    assert all(
        backend.backend.get_task_meta(r)["status"] == "PENDING" for r in pruned
    )  # the row is gone
    assert backend.backend.get_task_meta(kept_review)["status"] == "SUCCESS"
    for kept, status in ((kept_review, "needs_review"), (kept_running, "running")):
        assert runtime.store.runs.get_run(kept).status == status
        assert all(
            v > 0
            for k, v in _rows(runtime, [kept]).items()
            if k in ("runs", "step_attempts", "artifacts")
        )


def test_prune_forgets_the_redis_result_key(any_runtime: Runtime, demo) -> None:
    url = redis_url(BROKER_DB)
    wait_for_redis(url)
    settings = any_runtime.settings.model_copy(update={"result_backend": url})
    done, failed = _real_runs(any_runtime, demo)
    app = Celery("t", set_as_current=False)
    app.conf.result_backend = url
    for run_id in (done, failed):
        app.backend.store_result(run_id, {"ok": 1}, "SUCCESS")
    client = redis.Redis.from_url(url)
    keys = [f"celery-task-meta-{r}" for r in (done, failed)]
    assert client.exists(*keys) == 2
    prune_runs(
        any_runtime.store,
        any_runtime.artifacts,
        older_than=timedelta(days=30),
        now=utcnow() + LATER,
        forget=result_forgetter(settings),
    )
    assert client.exists(*keys) == 0
    assert any_runtime.store.runs.get_run(done) is None


def test_export_holds_the_run_its_records_and_artifacts(
    any_runtime: Runtime, demo, tmp_path: Path
) -> None:
    done, _ = _real_runs(any_runtime, demo)
    target = tmp_path / "run.zip"
    count = export_run(any_runtime.store, any_runtime.artifacts, done, target)
    with zipfile.ZipFile(target) as archive:
        names = set(archive.namelist())
        run = json.loads(archive.read("run.json"))
        assert run["id"] == done and run["status"] == "completed" and "secrets" not in run
        assert run["notify_url"] == "https://hooks.example.com/…"
        assert json.loads(archive.read("steps.json")) and json.loads(
            archive.read("transitions.json")
        )
        assert json.loads(archive.read("webhooks.json"))[0]["url"] == "https://hooks.example.com/…"
        artifacts = any_runtime.store.steps.artifacts(done)
        assert count == len(artifacts) >= 1
        for a in artifacts:
            assert (
                archive.read(f"artifacts/{a.path}")
                == (any_runtime.settings.artifacts_dir / a.path).read_bytes()
            )
    assert {"handoffs.json", "artifacts.json"} <= names


def test_prune_refuses_statuses_still_in_play_and_bad_durations() -> None:
    for status in ("queued", "running", "retrying", "waiting_for_human", "needs_review"):
        with pytest.raises(ConfigError, match="never pruned"):
            prunable_statuses([status])
    with pytest.raises(ConfigError, match="no run status"):
        prunable_statuses(["done"])
    assert parse_duration("90m") == timedelta(minutes=90) and parse_duration("30d") == timedelta(
        days=30
    )
    for bad in ("30", "d", "-1d", "0h", "1y"):
        with pytest.raises(ConfigError):
            parse_duration(bad)


def _finished_days_ago(runtime: Runtime, run_ids: list[str], days: float) -> None:
    engine = create_engine(normalize_url(runtime.settings.database_url))
    with engine.begin() as conn:
        conn.execute(
            update(Run)
            .where(Run.id.in_(run_ids))
            .values(finished_at=utcnow() - timedelta(days=days))
        )
    engine.dispose()


def test_the_fleets_sweeper_applies_retention_by_itself(any_runtime: Runtime, demo) -> None:
    runtime = any_runtime
    old, recent = _real_runs(runtime, demo)
    _finished_days_ago(runtime, [old], 3)
    off = runtime.settings  # BROWSERQ_RETENTION_S unset: keep forever
    assert FleetSweeper(off, prune_expired).tick() == 0 and runtime.store.runs.get_run(old) is not None
    on = off.model_copy(update={"retention_s": 2 * 86400.0})
    sweeper = FleetSweeper(on, prune_expired)
    try:
        assert sweeper.tick() >= 1  # this process holds the sweep lock: it prunes
    finally:
        sweeper.stop()
    assert runtime.store.runs.get_run(old) is None
    assert runtime.store.runs.get_run(recent) is not None  # finished just now: kept


def test_a_batch_row_goes_with_its_last_pruned_run(any_runtime: Runtime, demo) -> None:
    runtime = any_runtime
    first, second = _real_runs(runtime, demo)
    batch_id = f"b{first[:20]}"
    runtime.store.batches.create_batch(batch_id=batch_id, template_name="t", template_version="1", total=2)
    engine = create_engine(normalize_url(runtime.settings.database_url))
    try:
        with engine.begin() as conn:
            conn.execute(update(Run).where(Run.id.in_([first, second])).values(batch_id=batch_id))
        _finished_days_ago(runtime, [first], 40)

        def batch_rows() -> int:
            with engine.connect() as conn:
                query = text("SELECT count(*) FROM batches WHERE id = :id")
                return int(conn.execute(query, {"id": batch_id}).scalar_one())

        prune_runs(runtime.store, runtime.artifacts, older_than=timedelta(days=30))
        assert runtime.store.runs.get_run(first) is None and batch_rows() == 1  # its other run still points at it
        _finished_days_ago(runtime, [second], 40)
        prune_runs(runtime.store, runtime.artifacts, older_than=timedelta(days=30))
        assert runtime.store.runs.get_run(second) is None
        assert batch_rows() == 0  # nothing about the batch is left
    finally:
        engine.dispose()
