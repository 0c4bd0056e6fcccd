"""Step attempts and artifact rows (browserq.store.steps), on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, timedelta

import pytest
from sqlalchemy import event, text

from browserq.errors import StoreError
from browserq.store import LeaseLost, RunStatus, StepStatus, Store
from browserq.store.models import utcnow
from browserq.store.step_records import ArtifactRow, StepEnd, StepRow
from tests.store.helpers import expire_lease, new_run, run_in, template
from tests.store.helpers import step as new_step

S = RunStatus


def test_step_attempts_are_append_only(store: Store) -> None:
    run_id = new_run(store, template(store))
    store.transitions.start_run(run_id, worker="w")
    nav = new_step(store, run_id, "0")
    store.steps.finish_step(nav, status="succeeded", url_after="https://example.test/b", output={"ok": 1})

    first = new_step(store, run_id, "1[3].0", attempt=1)
    store.steps.finish_step(
        first,
        status=StepStatus.FAILED,
        url_after="https://example.test/b",
        error_code="SELECTOR_NOT_FOUND",
        error_message="no element matched",
        retryable=True,
    )
    before = store.steps.steps(run_id)
    retry = new_step(store, run_id, "1[3].0", attempt=2)
    assert retry not in (nav, first)
    store.steps.finish_step(retry, status="succeeded", url_after="https://example.test/c", output="text")

    steps = store.steps.steps(run_id)
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
    run_id = new_run(store, template(store))
    step = new_step(store, run_id)
    (open_step,) = store.steps.steps(run_id)
    assert (open_step.status, open_step.finished_at, open_step.duration_ms) == (
        "started",
        None,
        None,
    )
    store.steps.finish_step(step, status="failed", url_after=None, error_code="TIMEOUT", retryable=True)
    with pytest.raises(StoreError, match="already finished"):
        store.steps.finish_step(step, status="succeeded", url_after=None)
    assert store.steps.steps(run_id)[0].status == "failed"


def test_finish_step_errors(store: Store) -> None:
    with pytest.raises(StoreError, match="no such attempt"):
        store.steps.finish_step(987654, status="succeeded", url_after=None)
    run_id = new_run(store, template(store))
    step = new_step(store, run_id)
    with pytest.raises(ValueError, match="final status"):
        store.steps.finish_step(step, status="started", url_after=None)
    with pytest.raises(ValueError, match="unknown step status"):
        store.steps.finish_step(step, status="weird", url_after=None)


def test_skipped_step_is_one_row(store: Store) -> None:
    run_id = new_run(store, template(store))
    sid = store.steps.record_skipped_step(
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
    (step,) = store.steps.steps(run_id)
    assert step.id == sid
    assert (step.status, step.error_message, step.duration_ms) == (
        "skipped",
        "when: condition was false",
        0.0,
    )
    assert step.finished_at == step.started_at
    assert step.error_code is None


def test_steps_from_many_threads(store: Store) -> None:
    run_ids = [new_run(store, template(store)) for _ in range(4)]
    errors: list[BaseException] = []

    def work(run_id: str) -> None:
        try:
            for i in range(8):
                sid = new_step(store, run_id, str(i))
                store.steps.finish_step(sid, status="succeeded", url_after=None)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(r,)) for r in run_ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    for run_id in run_ids:
        assert [s.step_path for s in store.steps.steps(run_id)] == [str(i) for i in range(8)]


def test_artifacts_are_linked_to_steps(store: Store) -> None:
    run_id = new_run(store, template(store))
    step = new_step(store, run_id)
    store.steps.finish_step(step, status="failed", url_after=None, error_code="TIMEOUT")
    shot = store.steps.add_artifact(
        run_id=run_id,
        step_attempt_id=step,
        kind="failure_screenshot",
        path=f"{run_id}/0-1.png",
        content_type="image/png",
        size=1234,
        sha256="c" * 64,
    )
    trace = store.steps.add_artifact(
        run_id=run_id,
        step_attempt_id=None,
        kind="trace",
        path=f"{run_id}/trace.zip",
        content_type="application/zip",
        size=5_000_000_000,
        sha256="d" * 64,
    )
    arts = store.steps.artifacts(run_id)
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
    assert store.steps.artifacts(run_id)[0].step_attempt_id is None


def test_finish_step_can_save_the_checkpoint_with_it(store: Store) -> None:
    run_id, lease = run_in(store, S.RUNNING)
    assert lease is not None
    sid = new_step(store, run_id, "0", token=lease.token)
    store.steps.finish_step(
        sid, status="succeeded", url_after=None, token=lease.token, checkpoint={"path": "0"}
    )
    assert store.runs.get_run(run_id).checkpoint == {"path": "0"}  # type: ignore[union-attr]
    late = new_step(store, run_id, "1", token=lease.token)
    store.transitions.transition(run_id, "queued", reason="swept", worker="sweeper")  # revokes the lease
    with pytest.raises(LeaseLost):
        store.steps.finish_step(
            late, status="succeeded", url_after=None, token=lease.token, checkpoint={"path": "1"}
        )
    assert store.runs.get_run(run_id).checkpoint == {"path": "0"}  # type: ignore[union-attr]
    assert store.steps.steps(run_id)[-1].status == "started"


def test_mark_interrupted_steps(store: Store) -> None:
    run_id = new_run(store)
    first = store.leases.acquire_lease(run_id, owner="a", ttl_s=30)
    done = new_step(store, run_id, "0", run_attempt=first.attempt)
    store.steps.finish_step(done, status="succeeded", url_after=None)
    hanging = new_step(store, run_id, "1", run_attempt=first.attempt)
    expire_lease(store, run_id)
    second = store.leases.acquire_lease(run_id, owner="b", ttl_s=30)
    current = new_step(store, run_id, "1", run_attempt=second.attempt)

    marked = store.steps.mark_interrupted_steps(run_id, before_attempt=second.attempt)
    assert [s.id for s in marked] == [hanging]
    (m,) = marked
    assert (m.status, m.error_code, m.error_message) == (
        "unknown",
        "WORKER_LOST",
        "the worker stopped before this step reported a result",
    )
    assert {s.id: s.status for s in store.steps.steps(run_id)} == {
        done: "succeeded",
        hanging: "unknown",
        current: "started",
    }
    assert store.steps.mark_interrupted_steps(run_id, before_attempt=second.attempt) == []
    with pytest.raises(StoreError, match="already finished"):
        store.steps.finish_step(hanging, status="succeeded", url_after=None)


def _start(run_id: str, path: str) -> dict:
    return dict(run_id=run_id, run_attempt=1, step_path=path, step_id=None, attempt=1, action="click",
                inputs={"selector": "#go"}, url_before="https://example.test/a")


def test_write_steps_writes_a_batch_in_one_transaction(store: Store) -> None:
    """Held-back starts, ends and artifact rows, and the checkpoint, in one commit, in order."""
    run_id, lease = run_in(store, S.RUNNING)
    assert lease is not None
    open_step = new_step(store, run_id, "0", token=lease.token)
    commits: list[int] = []

    def count(_conn: object) -> None:
        commits.append(1)

    event.listen(store.engine, "commit", count)
    try:
        t0 = utcnow()
        ids = store.steps.write_steps(
            run_id,
            [
                StepEnd(open_step, {"status": "succeeded", "url_after": "https://example.test/b"},
                        t0 + timedelta(milliseconds=5)),
                StepRow(_start(run_id, "1"), t0, {"status": "failed", "error_code": "TIMEOUT",
                                                  "retryable": True}, t0 + timedelta(milliseconds=40)),
                ArtifactRow({"run_id": run_id, "kind": "screenshot", "path": f"{run_id}/a.png",
                             "content_type": "image/png", "size": 3, "sha256": "e" * 64}, step_ref=1),
                StepRow(_start(run_id, "2"), t0),
            ],
            token=lease.token,
            checkpoint={"path": "1"},
        ).ids
    finally:
        event.remove(store.engine, "commit", count)
    assert len(commits) == 1
    steps = store.steps.steps(run_id)
    assert [(s.step_path, s.status) for s in steps] == [("0", "succeeded"), ("1", "failed"), ("2", "started")]
    assert ids[0] == open_step and ids[1] == steps[1].id and ids[3] == steps[2].id
    assert steps[1].duration_ms == pytest.approx(40.0) and steps[1].error_code == "TIMEOUT"
    (artifact,) = store.steps.artifacts(run_id)
    assert artifact.id == ids[2] and artifact.step_attempt_id == steps[1].id
    assert store.runs.get_run(run_id).checkpoint == {"path": "1"}  # type: ignore[union-attr]


def test_write_steps_is_all_or_nothing_and_fenced(store: Store) -> None:
    run_id, lease = run_in(store, S.RUNNING)
    assert lease is not None
    with pytest.raises(StoreError, match="no such attempt"):  # a refused record refuses the batch
        store.steps.write_steps(
            run_id, [StepRow(_start(run_id, "0"), utcnow()), StepEnd(987654, {"status": "succeeded"}, utcnow())],
            token=lease.token,
        )
    assert store.steps.steps(run_id) == []
    with pytest.raises(ValueError, match="final status"):
        store.steps.write_steps(run_id, [StepRow(_start(run_id, "0"), utcnow(), {"status": "started"}, utcnow())])
    store.transitions.transition(run_id, "queued", reason="swept", worker="sweeper")  # revokes the lease
    with pytest.raises(LeaseLost):
        store.steps.write_steps(run_id, [StepRow(_start(run_id, "0"), utcnow())], token=lease.token,
                          checkpoint={"path": "0"})
    assert store.steps.steps(run_id) == [] and store.runs.get_run(run_id).checkpoint is None  # type: ignore[union-attr]


def test_write_steps_renews_the_lease_and_reads_the_cancel_request_on_the_way(store: Store) -> None:
    """``renew_ttl_s``: the batch's one transaction also pushes the lease's expiry (as
    renew_lease would) and returns the cancel request; a run no longer running is not renewed."""
    run_id, lease = run_in(store, S.RUNNING)
    assert lease is not None
    before = store.runs.get_run(run_id)
    assert before is not None and before.lease_expires_at is not None
    written = store.steps.write_steps(run_id, [StepRow(_start(run_id, "0"), utcnow())], token=lease.token,
                                renew_ttl_s=3600)
    assert written.lease is not None and (written.lease.renewed, written.lease.cancel_reason) == (True, None)
    after = store.runs.get_run(run_id)
    assert after is not None and after.lease_expires_at is not None and after.heartbeat_at is not None
    assert after.lease_expires_at > before.lease_expires_at + timedelta(minutes=30)
    assert store.steps.write_steps(run_id, [StepRow(_start(run_id, "1"), utcnow())], token=lease.token).lease is None
    store.cancellation.request_cancel(run_id, reason="stop it")
    written = store.steps.write_steps(run_id, [StepRow(_start(run_id, "2"), utcnow())], token=lease.token,
                                renew_ttl_s=60)
    assert written.lease is not None and written.lease.cancel_reason == "stop it"
    store.transitions.transition(run_id, "cancelled", reason="cancelled", token=lease.token)  # not running any more
    written = store.steps.write_steps(run_id, [StepRow(_start(run_id, "3"), utcnow())], token=lease.token,
                                renew_ttl_s=60)
    assert written.lease is not None and not written.lease.renewed
