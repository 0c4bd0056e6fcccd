"""The run journal against a real store (SQLite and PostgreSQL): what the runner says happened
is what the store holds, redacted, fenced by the run's lease, and a refused record is replaced
by one that says so; records that need not be durable are held back and written together (at a
durable record, a flush, or in the background after ``flush_ms``), and 0 writes each at once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from browserq.errors import Codes, StepFailed
from browserq.journal import MAX_RECORDED_OUTPUT_BYTES, RunJournal, RunRecords
from browserq.redact import Redactor
from browserq.store import ArtifactDir, IdentityLeaseLost, LeaseLost, Store, StoreUnavailable

SECRET = "hunter2-very-secret"


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path / 'journal.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    store = Store(url)
    store.schema.upgrade()
    yield store
    store.dispose()


def _leased_run(store: Store) -> tuple[str, int]:
    """A run of its own, leased: (run id, the lease's fencing token)."""
    template_id = store.templates.save_template(
        name="journal", version="1", content_hash="a" * 64, body="name: journal\n", source="t.yaml"
    )
    run_id = uuid.uuid4().hex
    store.runs.create_run(
        run_id=run_id, template_id=template_id, template_name="journal", template_version="1",
        params={}, timeout_s=30.0,
    )
    lease = store.leases.acquire_lease(run_id, owner="worker-a", ttl_s=30.0)
    return run_id, lease.token


def _journal(store: Store, tmp_path: Path, run_id: str, token: int | None, **kwargs: Any) -> RunJournal:
    return RunJournal(
        RunRecords.of(store),
        ArtifactDir(tmp_path / "artifacts"),
        run_id=run_id,
        run_attempt=1,
        token=token,
        redactor=Redactor({"password": SECRET}),
        **kwargs,
    )


def test_a_step_is_recorded_as_it_happened_and_redacted(store: Store, tmp_path: Path) -> None:
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token)

    async def scenario() -> None:
        record = await journal.step_started(
            path="0", step_id="login", attempt=1, action="fill",
            inputs={"selector": "#pw", "value": SECRET}, url_before=f"https://site.test/?pw={SECRET}",
            durable=True,
        )
        await journal.step_finished(
            record, status="succeeded", url_after="https://site.test/home", output={"echo": SECRET},
            warnings=[{"code": "W", "message": "kept 1 of 2"}],
        )
        failed = await journal.step_started(
            path="1", step_id=None, attempt=1, action="click", inputs={"selector": "#go"}, url_before=None
        )
        await journal.step_finished(
            failed, status="failed", url_after=None,
            failure=StepFailed(Codes.SELECTOR_NOT_FOUND, f"no #go for {SECRET}"),
        )
        await journal.flush()

    asyncio.run(scenario())
    first, second = store.steps.steps(run_id)
    assert (first.step_path, first.status, first.action) == ("0", "succeeded", "fill")
    assert SECRET not in str(first.inputs) and SECRET not in (first.url_before or "")
    assert SECRET not in str(first.output) and first.url_after == "https://site.test/home"
    assert first.warnings == [{"code": "W", "message": "kept 1 of 2"}]
    assert (second.status, second.error_code, second.retryable) == ("failed", "SELECTOR_NOT_FOUND", True)
    assert SECRET not in (second.error_message or "") and "no #go" in (second.error_message or "")


def test_a_checkpoint_is_stored_with_the_step_that_ends_it(store: Store, tmp_path: Path) -> None:
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token)
    checkpoint = {"path": "0", "seq": 1, "url": "https://site.test/"}

    async def scenario() -> None:
        record = await journal.step_started(
            path="0", step_id=None, attempt=1, action="navigate", inputs={}, url_before="about:blank"
        )
        await journal.step_finished(record, status="succeeded", url_after="https://site.test/",
                                    checkpoint=checkpoint, durable=True)

    asyncio.run(scenario())
    run = store.runs.get_run(run_id)
    assert run is not None and run.checkpoint is not None and run.checkpoint["seq"] == 1


def test_a_large_output_is_summarized_in_the_step_record(store: Store, tmp_path: Path) -> None:
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token)
    big = ["x" * 1024] * (MAX_RECORDED_OUTPUT_BYTES // 1024 + 10)

    async def scenario() -> None:
        record = await journal.step_started(
            path="0", step_id=None, attempt=1, action="extract", inputs={}, url_before=None
        )
        await journal.step_finished(record, status="succeeded", url_after=None, output=big)

    asyncio.run(scenario())
    (recorded,) = store.steps.steps(run_id)
    assert recorded.output["truncated"] is True and recorded.output["type"] == "list"
    assert recorded.output["bytes"] > MAX_RECORDED_OUTPUT_BYTES


def test_an_artifact_is_written_and_linked_to_its_step(store: Store, tmp_path: Path) -> None:
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token)

    async def scenario() -> tuple[Any, Any]:
        record = await journal.step_started(
            path="0", step_id=None, attempt=1, action="screenshot", inputs={}, url_before=None
        )
        linked = await journal.artifact(record, "screenshot", f"shot-{SECRET}.png", b"png-bytes", "image/png")
        loose = await journal.artifact(None, "console", "console.json", b"[]", "application/json")
        return record, (linked, loose)

    record, (linked, loose) = asyncio.run(scenario())
    assert SECRET not in linked.path and journal.artifact_base == tmp_path / "artifacts" / run_id
    assert (journal.artifact_base.parent / linked.path).read_bytes() == b"png-bytes"
    by_kind = {a.kind: a for a in store.steps.artifacts(run_id)}
    assert by_kind["screenshot"].step_attempt_id == record.attempt_id and by_kind["screenshot"].size == 9
    assert by_kind["console"].step_attempt_id is None and by_kind["console"].path == loose.path


def test_writes_are_fenced_by_the_lease(store: Store, tmp_path: Path) -> None:
    """A worker whose lease was taken over writes nothing more: every record says LeaseLost."""
    run_id, token = _leased_run(store)
    with store.engine.begin() as conn:  # the lease expires; another worker takes the run
        conn.execute(text("UPDATE runs SET lease_expires_at = :past WHERE id = :id"),
                     {"past": "2000-01-01 00:00:00", "id": run_id})
    store.leases.acquire_lease(run_id, owner="worker-b", ttl_s=30.0)
    stale = _journal(store, tmp_path, run_id, token)

    with pytest.raises(LeaseLost):
        asyncio.run(stale.step_started(path="0", step_id=None, attempt=1, action="get", inputs={}, url_before=None))
    with pytest.raises(LeaseLost):
        asyncio.run(stale.renew_lease(30.0))
    assert store.steps.steps(run_id) == []


def test_renewing_the_lease_reports_a_requested_cancel(store: Store, tmp_path: Path) -> None:
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token)
    assert asyncio.run(journal.renew_lease(30.0)) is None
    store.cancellation.request_cancel(run_id, reason="operator said stop")
    assert asyncio.run(journal.renew_lease(30.0)) == "operator said stop"


def test_a_refused_step_record_is_replaced_and_fails_the_step(store: Store, tmp_path: Path) -> None:
    """The database refuses the record (a trigger): the journal writes a minimal one that says
    so and raises STORE_WRITE_FAILED; the step is never left ``started``."""
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token)
    _refuse_succeeded_steps(store)
    try:
        async def scenario() -> None:
            record = await journal.step_started(
                path="0", step_id="refused", attempt=1, action="get", inputs={}, url_before=None
            )
            await journal.step_finished(record, status="succeeded", url_after=None, output="t")

        with pytest.raises(StepFailed) as raised:
            asyncio.run(scenario())
    finally:
        _drop_refusal(store)
    assert raised.value.code is Codes.STORE_WRITE_FAILED and "had succeeded" in raised.value.message
    (recorded,) = store.steps.steps(run_id)
    assert (recorded.status, recorded.error_code, recorded.retryable) == ("failed", "STORE_WRITE_FAILED", False)


def test_identity_storage_and_proxy_are_fenced_by_the_identity_lease(store: Store, tmp_path: Path) -> None:
    run_id, token = _leased_run(store)
    name = f"visitor-{uuid.uuid4().hex[:8]}"
    store.identities.upsert_identity(name=name)
    identity = store.identity_leases.acquire_identity(run_id=run_id, owner="worker-a", ttl_s=30.0, name=name)
    journal = _journal(store, tmp_path, run_id, token, identity=identity)
    asyncio.run(journal.identity_storage("gAAAAA-a-fernet-token"))
    asyncio.run(journal.identity_proxy("proxy-2"))
    view = store.identities.get_identity(name)
    assert view is not None and view.proxy_id == "proxy-2" and view.storage_saved_at is not None

    store.identity_leases.release_identity(name, token=identity.token)  # then another run is granted it
    store.identity_leases.acquire_identity(run_id=_leased_run(store)[0], owner="worker-b", ttl_s=30.0, name=name)
    with pytest.raises(IdentityLeaseLost):
        asyncio.run(journal.identity_proxy("proxy-3"))


def _refuse_succeeded_steps(store: Store) -> None:
    when = "NEW.status = 'succeeded' AND NEW.step_id = 'refused'"
    if store.dialect == "postgresql":
        statements = [
            "CREATE OR REPLACE FUNCTION bq_journal_refuse() RETURNS trigger AS $$ BEGIN "
            f"IF {when} THEN RAISE EXCEPTION 'refused by the test trigger'; END IF; RETURN NEW; END $$ "
            "LANGUAGE plpgsql",
            "CREATE TRIGGER bq_journal_refuse BEFORE INSERT OR UPDATE ON step_attempts FOR EACH ROW "
            "EXECUTE FUNCTION bq_journal_refuse()",
        ]
    else:
        statements = [
            f"CREATE TRIGGER bq_journal_refuse{suffix} BEFORE {op} ON step_attempts WHEN {when} "
            "BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END"
            for suffix, op in (("", "UPDATE"), ("_insert", "INSERT"))
        ]
    _drop_refusal(store)
    with store.engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement))


def _drop_refusal(store: Store) -> None:
    pg = store.dialect == "postgresql"
    with store.engine.begin() as conn:
        conn.execute(text("DROP TRIGGER IF EXISTS bq_journal_refuse" + (" ON step_attempts" if pg else "")))
        if not pg:
            conn.execute(text("DROP TRIGGER IF EXISTS bq_journal_refuse_insert"))
        if pg:
            conn.execute(text("DROP FUNCTION IF EXISTS bq_journal_refuse()"))


# --- buffering ---------------------------------------------------------------------------------
HELD = 60_000  # a flush_ms no test waits for: only durable records and flush() write


def _commits(store: Store) -> list[int]:
    """A list that grows by one at every commit on the store's engine."""
    commits: list[int] = []
    event.listen(store.engine, "commit", lambda _conn: commits.append(1))
    return commits


async def _step(journal: RunJournal, path: str, **kwargs: Any) -> Any:
    return await journal.step_started(
        path=path, step_id=f"s{path}", attempt=1, action="click", inputs={"selector": "#go"},
        url_before="https://site.test/", **kwargs,
    )


def test_held_back_records_are_written_in_one_transaction_at_flush(store: Store, tmp_path: Path) -> None:
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token, flush_ms=HELD)
    commits = _commits(store)

    async def scenario() -> tuple[Any, Any]:
        first = await _step(journal, "0")
        await journal.step_finished(first, status="succeeded", url_after="https://site.test/1")
        second = await _step(journal, "1")
        await journal.artifact(second, "screenshot", "shot.png", b"png", "image/png")
        await journal.step_finished(second, status="failed", url_after=None,
                                    failure=StepFailed(Codes.SELECTOR_NOT_FOUND, "no #go"))
        assert commits == []
        assert store.steps.steps(run_id) == [] and store.steps.artifacts(run_id) == []
        commits.clear()  # (the reads commit too)
        await journal.flush()
        return first, second

    first, second = asyncio.run(scenario())
    assert len(commits) == 1
    steps = store.steps.steps(run_id)
    assert [(s.id, s.step_path, s.status) for s in steps] == [
        (first.attempt_id, "0", "succeeded"), (second.attempt_id, "1", "failed")
    ]
    assert steps[1].error_code == "SELECTOR_NOT_FOUND" and steps[0].duration_ms is not None
    assert steps[0].finished_at is not None and steps[0].finished_at >= steps[0].started_at
    (shot,) = store.steps.artifacts(run_id)
    assert shot.step_attempt_id == second.attempt_id


def test_a_durable_record_writes_everything_before_it_with_it(store: Store, tmp_path: Path) -> None:
    """A side effect's start: every earlier record and the start itself, one commit, in order;
    its end (held back) updates the row later; a checkpoint end is durable whatever is passed."""
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token, flush_ms=HELD)
    commits = _commits(store)

    async def scenario() -> None:
        read = await _step(journal, "0")
        await journal.step_finished(read, status="succeeded", url_after=None)
        submit = await _step(journal, "1", durable=True)
        assert len(commits) == 1
        assert [(s.step_path, s.status) for s in store.steps.steps(run_id)] == [("0", "succeeded"), ("1", "started")]
        commits.clear()
        await journal.step_finished(submit, status="succeeded", url_after=None,
                                    checkpoint={"path": "1", "seq": 1})  # durable: a checkpoint
        assert len(commits) == 1 and store.steps.steps(run_id)[1].status == "succeeded"
        run = store.runs.get_run(run_id)
        assert run is not None and run.checkpoint == {"path": "1", "seq": 1}

    asyncio.run(scenario())


def test_the_background_flush_writes_held_back_records(store: Store, tmp_path: Path) -> None:
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token, flush_ms=50)

    async def scenario() -> None:
        record = await _step(journal, "0")
        await journal.step_finished(record, status="succeeded", url_after=None)
        for _ in range(200):  # a condition polled, not a timing assert
            if store.steps.steps(run_id):
                break
            await asyncio.sleep(0.05)
        assert [(s.step_path, s.status) for s in store.steps.steps(run_id)] == [("0", "succeeded")]
        later = await _step(journal, "1")  # arms the next background flush
        for _ in range(200):  # the row is visible a moment before the flush hands the record its id
            if len(store.steps.steps(run_id)) == 2 and later.attempt_id is not None:
                break
            await asyncio.sleep(0.05)
        assert store.steps.steps(run_id)[1].id == later.attempt_id and later.attempt_id is not None
        await journal.step_finished(later, status="succeeded", url_after=None)
        await journal.flush()
        assert store.steps.steps(run_id)[1].status == "succeeded"

    asyncio.run(scenario())


def test_flush_ms_zero_writes_every_record_at_once(store: Store, tmp_path: Path) -> None:
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token, flush_ms=0)
    commits = _commits(store)

    async def scenario() -> None:
        record = await _step(journal, "0")
        assert len(commits) == 1
        assert [s.status for s in store.steps.steps(run_id)] == ["started"] and record.attempt_id is not None
        await journal.artifact(record, "screenshot", "shot.png", b"png", "image/png")
        assert store.steps.artifacts(run_id)[0].step_attempt_id == record.attempt_id
        commits.clear()
        await journal.step_finished(record, status="succeeded", url_after=None)
        assert len(commits) == 1 and [s.status for s in store.steps.steps(run_id)] == ["succeeded"]

    asyncio.run(scenario())


def test_a_lost_lease_surfaces_from_the_flush_and_every_call_after(store: Store, tmp_path: Path) -> None:
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token, flush_ms=HELD)
    background = _journal(store, tmp_path, run_id, token, flush_ms=20)

    async def scenario() -> None:
        await _step(journal, "0")
        await _step(background, "9")
        with store.engine.begin() as conn:  # another worker takes the run
            conn.execute(text("UPDATE runs SET lease_expires_at = :past WHERE id = :id"),
                         {"past": "2000-01-01 00:00:00", "id": run_id})
        store.leases.acquire_lease(run_id, owner="worker-b", ttl_s=30.0)
        with pytest.raises(LeaseLost):
            await journal.flush()
        with pytest.raises(LeaseLost):
            await _step(journal, "1")
        for _ in range(200):  # the background flush meets it; the next call raises it
            await asyncio.sleep(0.05)
            try:
                await background.artifact(None, "console", "console.json", b"[]", "application/json")
            except LeaseLost:
                break
        else:
            pytest.fail("the background flush's LeaseLost never surfaced")

    asyncio.run(scenario())
    assert store.steps.steps(run_id) == [] and store.steps.artifacts(run_id) == []


def test_a_refused_held_back_record_is_replaced_and_the_rest_kept(store: Store, tmp_path: Path) -> None:
    """The batch is refused: written again one record at a time, the refused step replaced by
    one that says so, the others kept; STORE_WRITE_FAILED surfaces from the flush."""
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token, flush_ms=HELD)
    _refuse_succeeded_steps(store)
    try:
        async def scenario() -> None:
            good = await _step(journal, "0")
            await journal.step_finished(good, status="succeeded", url_after=None)
            refused = await journal.step_started(path="1", step_id="refused", attempt=1, action="get",
                                                 inputs={}, url_before=None)
            await journal.step_finished(refused, status="succeeded", url_after=None)
            after = await _step(journal, "2")
            await journal.step_finished(after, status="failed", url_after=None,
                                        failure=StepFailed(Codes.TIMEOUT, "slow"))
            await journal.flush()

        with pytest.raises(StepFailed) as raised:
            asyncio.run(scenario())
    finally:
        _drop_refusal(store)
    assert raised.value.code is Codes.STORE_WRITE_FAILED and "had succeeded" in raised.value.message
    assert [(s.step_path, s.status, s.error_code) for s in store.steps.steps(run_id)] == [
        ("0", "succeeded", None), ("1", "failed", "STORE_WRITE_FAILED"), ("2", "failed", "TIMEOUT"),
    ]


def test_an_outage_surfaces_from_the_flush_that_met_it(tmp_path: Path) -> None:
    """The database is away: the flush raises StoreUnavailable (its batch is dropped: those
    steps are redone on resume); a durable start is never reported written."""
    away = Store("postgresql+psycopg://postgres@127.0.0.1:1/none", retry_window_s=0)
    journal = _journal(away, tmp_path, "no-run", None, flush_ms=HELD)
    try:
        async def scenario() -> None:
            await _step(journal, "0")
            with pytest.raises(StoreUnavailable):
                await journal.flush()
            with pytest.raises(StoreUnavailable):
                await _step(journal, "1", durable=True)

        asyncio.run(scenario())
    finally:
        away.dispose()


def test_a_refusal_met_in_the_background_surfaces_at_the_next_flush(store: Store, tmp_path: Path) -> None:
    """Not from an artifact call (evidence only logs its errors): from the next barrier."""
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token, flush_ms=20)
    _refuse_succeeded_steps(store)
    try:
        async def scenario() -> None:
            refused = await journal.step_started(path="0", step_id="refused", attempt=1, action="get",
                                                 inputs={}, url_before=None)
            await journal.step_finished(refused, status="succeeded", url_after=None)
            for _ in range(200):
                if store.steps.steps(run_id):
                    break
                await asyncio.sleep(0.05)
            await journal.artifact(refused, "console", "console.json", b"[]", "application/json")
            with pytest.raises(StepFailed) as raised:
                await journal.flush()
            assert raised.value.code is Codes.STORE_WRITE_FAILED
            await journal.flush()  # raised once

        asyncio.run(scenario())
    finally:
        _drop_refusal(store)
    (step,) = store.steps.steps(run_id)
    assert (step.status, step.error_code) == ("failed", "STORE_WRITE_FAILED")
    assert store.steps.artifacts(run_id)[0].step_attempt_id == step.id


def test_a_step_ending_after_a_background_refusal_is_recorded_before_it_surfaces(
    store: Store, tmp_path: Path
) -> None:
    """The refusal of step 0 met in the background surfaces at step 1's checkpoint end — after
    that end and its checkpoint are written (step 1 is never left ``started`` behind it), naming
    step 0; a flush after another background refusal still writes what followed it."""
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token, flush_ms=20)
    _refuse_succeeded_steps(store)

    async def rows(n: int) -> None:
        for _ in range(200):  # a condition polled, not a timing assert
            if len(store.steps.steps(run_id)) >= n:
                return
            await asyncio.sleep(0.05)
        pytest.fail(f"the background flush did not write {n} rows")

    try:
        async def scenario() -> None:
            refused = await journal.step_started(path="0", step_id="refused", attempt=1, action="get",
                                                 inputs={}, url_before=None)
            await journal.step_finished(refused, status="succeeded", url_after=None)
            await rows(1)
            later = await _step(journal, "1")  # its start reaches the store in the background
            await rows(2)
            with pytest.raises(StepFailed) as raised:
                await journal.step_finished(later, status="failed", url_after=None,
                                            failure=StepFailed(Codes.TIMEOUT, "slow"),
                                            checkpoint={"path": "1", "seq": 1})
            assert raised.value.code is Codes.STORE_WRITE_FAILED and "step 0" in raised.value.message
            again = await journal.step_started(path="2", step_id="refused", attempt=1, action="get",
                                               inputs={}, url_before=None)
            await journal.step_finished(again, status="succeeded", url_after=None)
            await rows(3)
            last = await _step(journal, "3")
            with pytest.raises(StepFailed) as flushed:
                await journal.flush()
            assert "step 2" in flushed.value.message and last.attempt_id is not None

        asyncio.run(scenario())
    finally:
        _drop_refusal(store)
    assert [(s.step_path, s.status, s.error_code) for s in store.steps.steps(run_id)] == [
        ("0", "failed", "STORE_WRITE_FAILED"), ("1", "failed", "TIMEOUT"),
        ("2", "failed", "STORE_WRITE_FAILED"), ("3", "started", None),
    ]
    run = store.runs.get_run(run_id)
    assert run is not None and run.checkpoint == {"path": "1", "seq": 1}


def test_a_batch_write_renews_the_lease_so_the_heartbeat_needs_no_transaction(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leased run's batch write renews its lease and reads the cancel request: the heartbeat
    right after it commits nothing and still learns of the cancel; without a fresh write (or
    with FRESH_RENEWAL_S=0) it renews in a transaction of its own, as before."""
    from browserq.journal import lease_watch

    monkeypatch.setattr(lease_watch, "RENEW_EVERY_S", 0.0)  # every write renews (default: 0.5 s)
    run_id, token = _leased_run(store)
    journal = _journal(store, tmp_path, run_id, token, flush_ms=0, lease_ttl_s=30.0)
    commits = _commits(store)

    async def scenario() -> None:
        expires = store.runs.get_run(run_id).lease_expires_at  # type: ignore[union-attr]
        await _step(journal, "0")
        assert store.runs.get_run(run_id).lease_expires_at > expires  # type: ignore[union-attr,operator]
        commits.clear()
        assert await journal.renew_lease(30.0) is None
        assert commits == []
        store.cancellation.request_cancel(run_id, reason="operator said stop")
        await _step(journal, "1")
        commits.clear()
        assert await journal.renew_lease(30.0) == "operator said stop"
        assert commits == []

    asyncio.run(scenario())
    other_id, other_token = _leased_run(store)
    monkeypatch.setattr(lease_watch, "FRESH_RENEWAL_S", 0.0)
    other = _journal(store, tmp_path, other_id, other_token, flush_ms=0, lease_ttl_s=30.0)

    async def unfresh() -> None:
        await _step(other, "0")
        commits.clear()
        assert await other.renew_lease(30.0) is None
        assert len(commits) == 1

    asyncio.run(unfresh())
