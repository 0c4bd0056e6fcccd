"""The Store API on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import threading
import uuid
from datetime import UTC

import pytest
from sqlalchemy import func, select, text

from browserq.errors import StoreError
from browserq.settings import Settings
from browserq.store import (
    DuplicateRun,
    RunStatus,
    StepStatus,
    Store,
    TemplateRecord,
    normalize_url,
)

HASH_A = "a" * 64
HASH_B = "b" * 64


def _template(
    store: Store, name: str = "login", version: str = "1", content_hash: str = HASH_A
) -> int:
    return store.save_template(
        name=name,
        version=version,
        content_hash=content_hash,
        body=f"name: {name}\n",
        source="t.yaml",
    )


def _run(store: Store, template_id: int, *, name: str = "login", **kwargs) -> str:
    run_id = kwargs.pop("run_id", uuid.uuid4().hex)
    store.create_run(
        run_id=run_id,
        template_id=template_id,
        template_name=name,
        template_version="1",
        params=kwargs.pop("params", {"user": "ann", "password": "***"}),
        timeout_s=30.0,
        **kwargs,
    )
    return run_id


def _step(
    store: Store, run_id: str, path: str = "0", attempt: int = 1, run_attempt: int = 1
) -> int:
    return store.start_step(
        run_id=run_id,
        run_attempt=run_attempt,
        step_path=path,
        step_id=f"s{path}",
        attempt=attempt,
        action="click",
        inputs={"selector": "#go"},
        url_before="https://example.test/a",
    )


def _count(store: Store, table: str) -> int:
    with store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(text(table))).scalar_one()


# --- templates ---------------------------------------------------------------------------------


def test_save_template_is_idempotent(store: Store) -> None:
    first = _template(store)
    assert _template(store) == first
    other_hash = _template(store, content_hash=HASH_B)
    other_version = _template(store, version="2")
    assert len({first, other_hash, other_version}) == 3
    assert _count(store, "templates") == 3
    record = store.get_template_body(first)
    assert isinstance(record, TemplateRecord)
    assert (record.name, record.version, record.body) == ("login", "1", "name: login\n")
    assert record.created_at.tzinfo is not None


def test_save_template_rejects_a_bad_hash(store: Store) -> None:
    with pytest.raises(ValueError, match="sha256"):
        store.save_template(name="x", version="1", content_hash="nothex", body="", source="s")


def test_unknown_template_id(store: Store) -> None:
    with pytest.raises(StoreError, match="no template"):
        store.get_template_body(12345)


def test_concurrent_save_template_makes_one_row(store: Store) -> None:
    barrier = threading.Barrier(4)
    ids: list[int] = []
    errors: list[BaseException] = []

    def save() -> None:
        barrier.wait()
        try:
            ids.append(_template(store, name="race"))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=save) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert len(ids) == 4 and len(set(ids)) == 1
    assert _count(store, "templates") == 1


# --- runs --------------------------------------------------------------------------------------


def test_run_lifecycle(store: Store) -> None:
    tid = _template(store)
    run_id = _run(store, tid, task_id="task-1", queue="browserq", tenant="acme")
    run = store.get_run(run_id)
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

    first = store.start_run(run_id, worker="host-a/1")
    assert (first.status, first.attempt, first.worker) == (RunStatus.RUNNING, 1, "host-a/1")
    assert first.started_at is not None and first.heartbeat_at is not None

    second = store.start_run(run_id, worker="host-b/2")
    assert second.attempt == 2
    assert second.started_at == first.started_at
    assert second.worker == "host-b/2"
    assert second.heartbeat_at >= first.heartbeat_at

    store.finish_run(
        run_id,
        status=RunStatus.FAILED,
        outputs=None,
        error_code="SELECTOR_NOT_FOUND",
        error_message="no element matched #go",
        error_step_path="1[3].0",
    )
    done = store.get_run(run_id)
    assert done is not None and done.terminal
    assert (done.status, done.error_code, done.error_step_path) == (
        "failed",
        "SELECTOR_NOT_FOUND",
        "1[3].0",
    )
    assert done.finished_at is not None and done.finished_at >= done.started_at
    assert done.outputs is None


def test_non_terminal_finish_leaves_finished_at_empty(store: Store) -> None:
    run_id = _run(store, _template(store))
    store.start_run(run_id, worker="w")
    store.finish_run(run_id, status="retrying", outputs=None, error_code="WORKER_LOST")
    run = store.get_run(run_id)
    assert run is not None and run.status == "retrying" and run.finished_at is None
    assert not run.terminal
    store.heartbeat(run_id)


def test_views_are_frozen_plain_values(store: Store) -> None:
    run = store.get_run(_run(store, _template(store)))
    assert run is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.status = "completed"  # type: ignore[misc]


def test_json_round_trip_with_unicode(store: Store) -> None:
    outputs = {
        "title": "Ünïcödé — 日本語 ✓ 🙂",
        "rows": [{"n": 1, "ok": True, "v": None, "f": 1.5}, {"nested": {"deep": ["x", "ÿ", []]}}],
        "empty": {},
    }
    run_id = _run(store, _template(store), params={"q": "café", "list": [1, 2, {"a": "ß"}]})
    store.start_run(run_id, worker="w")
    store.finish_run(run_id, status="completed", outputs=outputs)
    run = store.get_run(run_id)
    assert run is not None
    assert run.outputs == outputs
    assert run.params == {"q": "café", "list": [1, 2, {"a": "ß"}]}


def test_none_json_is_sql_null(store: Store) -> None:
    run_id = _run(store, _template(store))
    store.start_run(run_id, worker="w")
    store.finish_run(run_id, status="completed", outputs=None)
    with store.engine.connect() as conn:
        nulls = conn.execute(
            text("SELECT count(*) FROM runs WHERE outputs IS NULL AND checkpoint IS NULL")
        ).scalar_one()
    assert nulls == 1


def test_unknown_run_ids(store: Store) -> None:
    assert store.get_run("nope") is None
    assert store.steps("nope") == [] and store.artifacts("nope") == []
    with pytest.raises(StoreError, match="no such run"):
        store.start_run("nope", worker="w")
    with pytest.raises(StoreError, match="no such run"):
        store.finish_run("nope", status="completed", outputs={})
    with pytest.raises(StoreError, match="no such run"):
        store.heartbeat("nope")
    store.delete_run("nope")  # deleting is idempotent


def test_statuses_are_validated(store: Store) -> None:
    tid = _template(store)
    with pytest.raises(ValueError, match="unknown run status"):
        _run(store, tid, status="exploded")
    run_id = _run(store, tid, status=RunStatus.QUEUED)
    with pytest.raises(ValueError, match="unknown run status"):
        store.finish_run(run_id, status="done", outputs=None)
    with pytest.raises(ValueError, match="unknown run status"):
        store.list_runs(status="done")


def test_run_with_unknown_template_is_refused(store: Store) -> None:
    with pytest.raises(StoreError):
        _run(store, 999)


def test_duplicate_idempotency_key(store: Store) -> None:
    tid = _template(store)
    first = _run(store, tid, idempotency_key="order-42")
    with pytest.raises(DuplicateRun) as caught:
        _run(store, tid, idempotency_key="order-42")
    assert caught.value.existing_run_id == first
    assert isinstance(caught.value, StoreError)
    found = store.find_run_by_idempotency_key("order-42")
    assert found is not None and found.id == first
    _run(store, tid)  # NULL keys do not collide
    _run(store, tid)


def test_duplicate_run_id_is_a_store_error(store: Store) -> None:
    tid = _template(store)
    run_id = _run(store, tid)
    with pytest.raises(StoreError):
        _run(store, tid, run_id=run_id)


def test_list_runs_filters_and_orders_newest_first(store: Store) -> None:
    login, search = _template(store, "login"), _template(store, "search")
    created = []
    for i in range(6):
        tid, name = (login, "login") if i % 2 == 0 else (search, "search")
        created.append(_run(store, tid, name=name))
    for done in (created[0], created[4]):
        store.start_run(done, worker="w")
        store.finish_run(done, status="completed", outputs={})

    assert [r.id for r in store.list_runs()] == created[::-1]
    assert [r.id for r in store.list_runs(limit=2)] == created[:-3:-1]
    assert [r.id for r in store.list_runs(template="search")] == [
        created[5],
        created[3],
        created[1],
    ]
    assert [r.id for r in store.list_runs(status="completed")] == [created[4], created[0]]
    assert [r.id for r in store.list_runs(status=RunStatus.QUEUED, template="login")] == [
        created[2]
    ]
    assert store.list_runs(template="nothing") == []
    with pytest.raises(ValueError):
        store.list_runs(limit=0)


# --- steps -------------------------------------------------------------------------------------


def test_step_attempts_are_append_only(store: Store) -> None:
    run_id = _run(store, _template(store))
    store.start_run(run_id, worker="w")
    nav = _step(store, run_id, "0")
    store.finish_step(nav, status="succeeded", url_after="https://example.test/b", output={"ok": 1})

    first = _step(store, run_id, "1[3].0", attempt=1)
    store.finish_step(
        first,
        status=StepStatus.FAILED,
        url_after="https://example.test/b",
        error_code="SELECTOR_NOT_FOUND",
        error_message="no element matched",
        retryable=True,
    )
    before = store.steps(run_id)
    retry = _step(store, run_id, "1[3].0", attempt=2)
    assert retry not in (nav, first)
    store.finish_step(retry, status="succeeded", url_after="https://example.test/c", output="text")

    steps = store.steps(run_id)
    assert [s.id for s in steps] == sorted(s.id for s in steps) == [nav, first, retry]
    assert steps[:2] == before  # the failed attempt was not touched by the retry
    assert [(s.step_path, s.attempt, s.status) for s in steps] == [
        ("0", 1, "succeeded"),
        ("1[3].0", 1, "failed"),
        ("1[3].0", 2, "succeeded"),
    ]
    failed = steps[1]
    assert (failed.error_code, failed.retryable, failed.output) == (
        "SELECTOR_NOT_FOUND",
        True,
        None,
    )
    assert steps[0].output == {"ok": 1} and steps[2].output == "text"
    for s in steps:
        assert s.run_attempt == 1 and s.action == "click" and s.inputs == {"selector": "#go"}
        assert s.duration_ms is not None and s.duration_ms >= 0
        assert s.finished_at is not None and s.finished_at >= s.started_at
        assert s.started_at.tzinfo == UTC
        assert s.url_before == "https://example.test/a"


def test_a_started_step_stays_open_until_finished(store: Store) -> None:
    run_id = _run(store, _template(store))
    step = _step(store, run_id)
    (open_step,) = store.steps(run_id)
    assert (open_step.status, open_step.finished_at, open_step.duration_ms) == (
        "started",
        None,
        None,
    )
    store.finish_step(step, status="failed", url_after=None, error_code="TIMEOUT", retryable=True)
    with pytest.raises(StoreError, match="already finished"):
        store.finish_step(step, status="succeeded", url_after=None)
    assert store.steps(run_id)[0].status == "failed"


def test_finish_step_errors(store: Store) -> None:
    with pytest.raises(StoreError, match="no such attempt"):
        store.finish_step(987654, status="succeeded", url_after=None)
    run_id = _run(store, _template(store))
    step = _step(store, run_id)
    with pytest.raises(ValueError, match="final status"):
        store.finish_step(step, status="started", url_after=None)
    with pytest.raises(ValueError, match="unknown step status"):
        store.finish_step(step, status="weird", url_after=None)


def test_skipped_step_is_one_row(store: Store) -> None:
    run_id = _run(store, _template(store))
    sid = store.record_skipped_step(
        run_id=run_id,
        run_attempt=1,
        step_path="2",
        step_id="maybe",
        attempt=1,
        action="click",
        inputs={"selector": "#cookie"},
        url_before="https://example.test/",
        reason="when: condition was false",
    )
    (step,) = store.steps(run_id)
    assert step.id == sid
    assert (step.status, step.error_message, step.duration_ms) == (
        "skipped",
        "when: condition was false",
        0.0,
    )
    assert step.finished_at == step.started_at
    assert step.error_code is None


def test_steps_from_many_threads(store: Store) -> None:
    run_ids = [_run(store, _template(store)) for _ in range(4)]
    errors: list[BaseException] = []

    def work(run_id: str) -> None:
        try:
            for i in range(8):
                sid = _step(store, run_id, str(i))
                store.finish_step(sid, status="succeeded", url_after=None)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(r,)) for r in run_ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    for run_id in run_ids:
        assert [s.step_path for s in store.steps(run_id)] == [str(i) for i in range(8)]


# --- artifacts and deletion --------------------------------------------------------------------


def test_artifacts_are_linked_to_steps(store: Store) -> None:
    run_id = _run(store, _template(store))
    step = _step(store, run_id)
    store.finish_step(step, status="failed", url_after=None, error_code="TIMEOUT")
    shot = store.add_artifact(
        run_id=run_id,
        step_attempt_id=step,
        kind="failure_screenshot",
        path=f"{run_id}/0-1.png",
        content_type="image/png",
        size=1234,
        sha256="c" * 64,
    )
    trace = store.add_artifact(
        run_id=run_id,
        step_attempt_id=None,
        kind="trace",
        path=f"{run_id}/trace.zip",
        content_type="application/zip",
        size=5_000_000_000,
        sha256="d" * 64,
    )
    arts = store.artifacts(run_id)
    assert [a.id for a in arts] == [shot, trace]
    assert (arts[0].step_attempt_id, arts[0].kind, arts[0].size) == (
        step,
        "failure_screenshot",
        1234,
    )
    assert (arts[1].step_attempt_id, arts[1].size) == (None, 5_000_000_000)
    assert arts[0].created_at.tzinfo == UTC

    # Removing a step attempt row (never done by the store) keeps the artifact, unlinked.
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM step_attempts WHERE id = :id"), {"id": step})
    assert store.artifacts(run_id)[0].step_attempt_id is None


def test_delete_run_cascades(store: Store) -> None:
    tid = _template(store)
    doomed, kept = _run(store, tid), _run(store, tid)
    for run_id in (doomed, kept):
        step = _step(store, run_id)
        store.finish_step(step, status="succeeded", url_after=None)
        store.add_artifact(
            run_id=run_id,
            step_attempt_id=step,
            kind="screenshot",
            path=f"{run_id}/s.png",
            content_type="image/png",
            size=1,
            sha256="e" * 64,
        )
    store.delete_run(doomed)
    assert store.get_run(doomed) is None
    assert store.steps(doomed) == [] and store.artifacts(doomed) == []
    assert len(store.steps(kept)) == 1 and len(store.artifacts(kept)) == 1
    assert (_count(store, "step_attempts"), _count(store, "artifacts")) == (1, 1)


# --- engine and errors -------------------------------------------------------------------------


def test_unreachable_postgres_is_a_store_error_without_password() -> None:
    store = Store("postgresql://browserq:s3cr3t-pw@127.0.0.1:1/browserq", retry_window_s=0)
    try:
        for call in (lambda: store.get_run("x"), store.upgrade, store.current_revision):
            with pytest.raises(StoreError) as caught:
                call()
            message = str(caught.value)
            assert "s3cr3t-pw" not in message
            assert "127.0.0.1:1" in message and "***" in message
            assert "unavailable" in message
        assert "s3cr3t-pw" not in repr(store)
    finally:
        store.dispose()


def test_unmigrated_database_is_a_store_error(empty_url: str) -> None:
    store = Store(empty_url)
    try:
        with pytest.raises(StoreError):
            store.get_run("x")
    finally:
        store.dispose()


def test_urls_are_normalized() -> None:
    assert normalize_url("postgresql://u:p@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("postgres://u:p@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("postgresql+psycopg://h/db").drivername == "postgresql+psycopg"
    assert normalize_url("sqlite:///x.db").drivername == "sqlite"
    with pytest.raises(StoreError, match="BROWSERQ_DATABASE_URL"):
        normalize_url("not a url")


def test_from_settings(store_url: str) -> None:
    store = Store.from_settings(Settings(database_url=store_url))
    try:
        assert store.list_runs() == []
    finally:
        store.dispose()


def test_sqlite_pragmas(tmp_path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'nested' / 'dir' / 'p.db'}")
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
    finally:
        store.dispose()
