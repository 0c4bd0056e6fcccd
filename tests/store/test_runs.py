"""The run record (browserq.store.runs): create, read, list, delete, on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
from datetime import UTC

import pytest
from sqlalchemy import text

from browserq.errors import StoreError
from browserq.store import DuplicateRun, RunStatus, Store
from tests.store.helpers import count, new_run, template
from tests.store.helpers import step as new_step


def test_run_lifecycle(store: Store) -> None:
    tid = template(store)
    run_id = new_run(
        store,
        tid,
        task_id="task-1",
        queue="browserq",
        tenant="acme",
        params={"user": "ann", "password": "***"},
    )
    run = store.runs.get_run(run_id)
    assert run is not None
    assert (run.status, run.attempt, run.started_at, run.finished_at) == ("queued", 0, None, None)
    assert run.queued_at is not None and run.queued_at.tzinfo == UTC
    assert (run.task_id, run.queue, run.tenant, run.timeout_s) == (
        "task-1",
        "browserq",
        "acme",
        30.0,
    )
    assert run.params == {"user": "ann", "password": "***"}

    first = store.transitions.start_run(run_id, worker="host-a/1")
    assert (first.status, first.attempt, first.worker) == (RunStatus.RUNNING, 1, "host-a/1")
    assert first.started_at is not None and first.heartbeat_at is not None

    second = store.transitions.start_run(run_id, worker="host-b/2")
    assert second.attempt == 2
    assert second.started_at == first.started_at
    assert second.worker == "host-b/2"
    assert second.heartbeat_at >= first.heartbeat_at

    store.transitions.finish_run(
        run_id,
        status=RunStatus.FAILED,
        outputs=None,
        error_code="SELECTOR_NOT_FOUND",
        error_message="no element matched #go",
        error_step_path="1[3].0",
    )
    done = store.runs.get_run(run_id)
    assert done is not None and done.terminal
    assert (done.status, done.error_code, done.error_step_path) == (
        "failed",
        "SELECTOR_NOT_FOUND",
        "1[3].0",
    )
    assert done.finished_at is not None and done.finished_at >= done.started_at
    assert done.outputs is None


def test_views_are_frozen_plain_values(store: Store) -> None:
    run = store.runs.get_run(new_run(store, template(store)))
    assert run is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.status = "completed"  # type: ignore[misc]


def test_json_round_trip_with_unicode(store: Store) -> None:
    outputs = {
        "title": "Ünïcödé — 日本語 ✓ 🙂",
        "rows": [{"n": 1, "ok": True, "v": None, "f": 1.5}, {"nested": {"deep": ["x", "ÿ", []]}}],
        "empty": {},
    }
    run_id = new_run(store, template(store), params={"q": "café", "list": [1, 2, {"a": "ß"}]})
    store.transitions.start_run(run_id, worker="w")
    store.transitions.finish_run(run_id, status="completed", outputs=outputs)
    run = store.runs.get_run(run_id)
    assert run is not None
    assert run.outputs == outputs
    assert run.params == {"q": "café", "list": [1, 2, {"a": "ß"}]}


def test_none_json_is_sql_null(store: Store) -> None:
    run_id = new_run(store, template(store))
    store.transitions.start_run(run_id, worker="w")
    store.transitions.finish_run(run_id, status="completed", outputs=None)
    with store.engine.connect() as conn:
        nulls = conn.execute(
            text("SELECT count(*) FROM runs WHERE outputs IS NULL AND checkpoint IS NULL")
        ).scalar_one()
    assert nulls == 1


def test_unknown_run_ids(store: Store) -> None:
    assert store.runs.get_run("nope") is None
    assert store.steps.steps("nope") == [] and store.steps.artifacts("nope") == []
    with pytest.raises(StoreError, match="no such run"):
        store.transitions.start_run("nope", worker="w")
    with pytest.raises(StoreError, match="no such run"):
        store.transitions.finish_run("nope", status="completed", outputs={})
    with pytest.raises(StoreError, match="no such run"):
        store.runs.heartbeat("nope")
    store.runs.delete_run("nope")  # deleting is idempotent


def test_statuses_are_validated(store: Store) -> None:
    tid = template(store)
    with pytest.raises(ValueError, match="unknown run status"):
        new_run(store, tid, status="exploded")
    run_id = new_run(store, tid, status=RunStatus.QUEUED)
    with pytest.raises(ValueError, match="unknown run status"):
        store.transitions.finish_run(run_id, status="done", outputs=None)
    with pytest.raises(ValueError, match="unknown run status"):
        store.runs.list_runs(status="done")


def test_run_with_unknown_template_is_refused(store: Store) -> None:
    with pytest.raises(StoreError):
        new_run(store, 999)


def test_duplicate_idempotency_key(store: Store) -> None:
    tid = template(store)
    first = new_run(store, tid, idempotency_key="order-42")
    with pytest.raises(DuplicateRun) as caught:
        new_run(store, tid, idempotency_key="order-42")
    assert caught.value.existing_run_id == first
    assert isinstance(caught.value, StoreError)
    found = store.runs.find_run_by_idempotency_key("order-42")
    assert found is not None and found.id == first
    new_run(store, tid)  # NULL keys do not collide
    new_run(store, tid)


def test_duplicate_run_id_is_a_store_error(store: Store) -> None:
    tid = template(store)
    run_id = new_run(store, tid)
    with pytest.raises(StoreError):
        new_run(store, tid, run_id=run_id)


def test_list_runs_filters_and_orders_newest_first(store: Store) -> None:
    login, search = template(store, "login"), template(store, "search")
    created = []
    for i in range(6):
        tid, name = (login, "login") if i % 2 == 0 else (search, "search")
        created.append(new_run(store, tid, name=name))
    for done in (created[0], created[4]):
        store.transitions.start_run(done, worker="w")
        store.transitions.finish_run(done, status="completed", outputs={})

    assert [r.id for r in store.runs.list_runs()] == created[::-1]
    assert [r.id for r in store.runs.list_runs(limit=2)] == created[:-3:-1]
    assert [r.id for r in store.runs.list_runs(template="search")] == [
        created[5],
        created[3],
        created[1],
    ]
    assert [r.id for r in store.runs.list_runs(status="completed")] == [created[4], created[0]]
    assert [r.id for r in store.runs.list_runs(status=RunStatus.QUEUED, template="login")] == [
        created[2]
    ]
    assert store.runs.list_runs(template="nothing") == []
    with pytest.raises(ValueError):
        store.runs.list_runs(limit=0)


def test_delete_run_cascades(store: Store) -> None:
    tid = template(store)
    doomed, kept = new_run(store, tid), new_run(store, tid)
    for run_id in (doomed, kept):
        step = new_step(store, run_id)
        store.steps.finish_step(step, status="succeeded", url_after=None)
        store.steps.add_artifact(
            run_id=run_id,
            step_attempt_id=step,
            kind="screenshot",
            path=f"{run_id}/s.png",
            content_type="image/png",
            size=1,
            sha256="e" * 64,
        )
    store.runs.delete_run(doomed)
    assert store.runs.get_run(doomed) is None
    assert store.steps.steps(doomed) == [] and store.steps.artifacts(doomed) == []
    assert len(store.steps.steps(kept)) == 1 and len(store.steps.artifacts(kept)) == 1
    assert (count(store, "step_attempts"), count(store, "artifacts")) == (1, 1)


def test_a_run_sent_at_once_is_recorded_enqueued(store: Store) -> None:
    later = store.runs.get_run(new_run(store))
    sent = store.runs.get_run(new_run(store, enqueued=True))
    assert later is not None and later.enqueued_at is None  # stamped by mark_enqueued when sent
    assert sent is not None and sent.enqueued_at is not None and sent.queued_at is not None
