"""The store's plumbing (browserq.store.plumbing) riding out database outages: whole-transaction
retries, and no double writes."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Self

import psycopg
import pytest
from sqlalchemy import event, exc
from sqlalchemy.engine import make_url

from browserq.errors import StoreError
from browserq.store import Store, StoreUnavailable, plumbing
from browserq.store.engine import DbTimeouts
from tests.store.conftest import PG_ADMIN_URL, PgDatabases
from tests.store.helpers import count, new_run, step, template
from tests.store.tcp_proxy import TcpProxy


@pytest.fixture
def proxied(pg_databases: PgDatabases) -> Iterator[tuple[str, TcpProxy]]:
    """A migrated PostgreSQL database, and its URL through a TCP proxy we can cut."""
    direct = pg_databases.create()
    setup = Store(direct)
    setup.schema.upgrade()
    setup.dispose()
    admin = make_url(PG_ADMIN_URL)
    proxy = TcpProxy(admin.host or "127.0.0.1", admin.port or 5432).start()
    url = make_url(direct).set(port=proxy.port).render_as_string(hide_password=False)
    try:
        yield url, proxy
    finally:
        proxy.stop()


def test_writes_ride_out_an_outage(proxied: tuple[str, TcpProxy]) -> None:
    url, proxy = proxied
    store = Store(url, retry_window_s=30)
    total = 120
    done = threading.Event()
    progress: list[int] = []
    latencies: list[float] = []
    errors: list[BaseException] = []
    try:
        run_id = new_run(store)
        lease = store.leases.acquire_lease(run_id, owner="writer", ttl_s=120)

        def write() -> None:
            try:
                for i in range(total):
                    began = time.monotonic()
                    sid = step(store, run_id, str(i), token=lease.token)
                    store.steps.finish_step(
                        sid, status="succeeded", url_after=None, output={"i": i}, token=lease.token
                    )
                    if i % 10 == 0:
                        store.steps.add_artifact(
                            run_id=run_id,
                            step_attempt_id=sid,
                            kind="screenshot",
                            path=f"{run_id}/{i}.png",
                            content_type="image/png",
                            size=i,
                            sha256=f"{i:064x}",
                            token=lease.token,
                        )
                        store.leases.renew_lease(run_id, token=lease.token, ttl_s=120)
                    latencies.append(time.monotonic() - began)
                    progress.append(i)
                    time.sleep(0.005)
                store.transitions.finish_run(
                    run_id, status="completed", outputs={"n": total}, token=lease.token
                )
            except BaseException as e:
                errors.append(e)
            finally:
                done.set()

        writer = threading.Thread(target=write)
        writer.start()
        deadline = time.monotonic() + 20
        while len(progress) < 25 and time.monotonic() < deadline and not done.is_set():
            time.sleep(0.01)
        proxy.cut()
        cut_at = len(progress)
        time.sleep(3)
        during = len(progress)
        proxy.restore()
        writer.join(60)
        assert not writer.is_alive()
        assert errors == []
        assert during - cut_at <= 1  # nothing got through while the database was away
        assert max(latencies) >= 2.5  # a write waited out the outage, then landed

        steps = store.steps.steps(run_id)
        assert [s.step_path for s in steps] == [str(i) for i in range(total)]  # each exactly once
        assert all(s.status == "succeeded" for s in steps)
        assert [s.output for s in steps] == [{"i": i} for i in range(total)]
        assert [a.size for a in store.steps.artifacts(run_id)] == list(range(0, total, 10))
        run = store.runs.get_run(run_id)
        assert run is not None and run.status == "completed" and run.outputs == {"n": total}
        assert [t.to_status for t in store.transitions.transitions(run_id)] == [
            "queued",
            "running",
            "completed",
        ]
        assert proxy.connections > 1  # the store reconnected
    finally:
        store.dispose()


def test_a_longer_outage_than_the_window_is_a_clear_error(proxied: tuple[str, TcpProxy]) -> None:
    url, proxy = proxied
    store = Store(url, retry_window_s=1)
    try:
        run_id = new_run(store)
        proxy.cut()
        began = time.monotonic()
        with pytest.raises(StoreUnavailable) as caught:
            store.transitions.finish_run(run_id, status="failed", outputs=None, error_code="X")
        elapsed = time.monotonic() - began
        assert 0.9 <= elapsed < 6
        message = str(caught.value)
        assert isinstance(caught.value, StoreError)
        assert message.startswith(f"finishing run {run_id}: database postgresql+psycopg://")
        assert f":{proxy.port}/" in message
        assert "is unavailable (gave up after" in message and "retry_window_s=1)" in message
        proxy.restore()
        assert store.runs.get_run(run_id).status == "queued"  # type: ignore[union-attr]
    finally:
        store.dispose()


def test_logic_errors_are_not_retried(store_url: str) -> None:
    store = Store(store_url, retry_window_s=60)
    try:
        began = time.monotonic()
        with pytest.raises(StoreError):
            new_run(store, template_id=424242)  # foreign key violation
        with pytest.raises(StoreError):
            new_run(store, run_id="same", template_id=template(store))
            new_run(store, run_id="same", template_id=template(store), params={"other": 1})
        assert time.monotonic() - began < 5
    finally:
        store.dispose()


class _LoseAcks:
    """Make the next commit apply, then fail as if the acknowledgement was lost on the wire."""

    def __init__(self, store: Store) -> None:
        self.armed = False
        self.fired = 0
        event.listen(store.database._writing, "after_commit", self._after_commit)

    def _after_commit(self, _session: object) -> None:
        if self.armed:
            self.armed = False
            self.fired += 1
            raise exc.OperationalError(
                "COMMIT",
                None,
                psycopg.OperationalError("server closed the connection unexpectedly"),
            )

    def __enter__(self) -> Self:
        self.armed = True
        return self

    def __exit__(self, *_exc: object) -> None:
        assert not self.armed, "the commit was never reached"


def test_a_lost_commit_acknowledgement_does_not_write_twice(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plumbing, "RETRY_FIRST_DELAY_S", 0.01)
    store = Store(store_url, retry_window_s=10)
    lose = _LoseAcks(store)
    try:
        tid = template(store)
        with lose:
            run_id = new_run(store, tid, idempotency_key="k1")
        with lose:
            store.batches.create_batch(
                batch_id="b", template_name="login", template_version="1", total=1, breaker=None
            )
        with lose:
            lease = store.leases.acquire_lease(run_id, owner="w", ttl_s=30)
        assert (lease.token, lease.attempt) == (1, 1)
        with lose:
            sid = step(store, run_id, "0", token=lease.token)
        with lose:
            store.steps.finish_step(sid, status="succeeded", url_after=None, token=lease.token)
        with lose:
            store.steps.add_artifact(
                run_id=run_id,
                step_attempt_id=sid,
                kind="dom",
                path="d.html",
                content_type="text/html",
                size=1,
                sha256="a" * 64,
                token=lease.token,
            )
        with lose:
            store.transitions.transition(run_id, "retrying", reason="crash", token=lease.token)
        with lose:
            lease = store.leases.acquire_lease(run_id, owner="w", ttl_s=30)
        with lose:
            store.transitions.finish_run(run_id, status="completed", outputs={"ok": True}, token=lease.token)
        assert lose.fired == 9

        assert count(store, "runs") == 1 and count(store, "batches") == 1
        assert len(store.steps.steps(run_id)) == 1 and store.steps.steps(run_id)[0].status == "succeeded"
        assert len(store.steps.artifacts(run_id)) == 1
        assert [t.to_status for t in store.transitions.transitions(run_id)] == [
            "queued",
            "running",
            "retrying",
            "running",
            "completed",
        ]
        run = store.runs.get_run(run_id)
        assert run is not None and (run.status, run.attempt, run.lease_token) == ("completed", 2, 2)
    finally:
        store.dispose()


def test_sqlite_lock_contention_is_waited_out(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'locked.db'}"
    store = Store(url, retry_window_s=20)
    store.schema.upgrade()
    run_id = new_run(store)
    holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock for a while
    released = threading.Timer(0.5, lambda: holder.execute("COMMIT"))
    released.start()
    try:
        began = time.monotonic()
        store.runs.mark_enqueued(run_id)
        assert time.monotonic() - began >= 0.3
        assert store.runs.get_run(run_id).enqueued_at is not None  # type: ignore[union-attr]
    finally:
        released.join()
        holder.close()
        store.dispose()


def _terminate_other_sessions(url: str) -> int:
    """End every server session of ``url``'s database but this one (what a PostgreSQL restart,
    a failover or an idle-connection reaper does to a pool)."""
    database = make_url(url).database
    with psycopg.connect(PG_ADMIN_URL.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
        rows = conn.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity where datname = %s and pid <> pg_backend_pid()",
            (database,),
        ).fetchall()
    return len(rows)


def test_an_idle_connection_that_died_is_replaced_before_use(
    proxied: tuple[str, TcpProxy], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection idle past PG_PING_AFTER_IDLE_S is pinged, and one that died meanwhile is
    replaced before use — no error, no retry."""
    from browserq.store import engine as store_engine

    url, _proxy = proxied
    monkeypatch.setattr(store_engine, "PG_PING_AFTER_IDLE_S", 0.5)
    store = Store(url, retry_window_s=10)
    try:
        run_id = new_run(store)
        assert store.runs.get_run(run_id) is not None
        assert _terminate_other_sessions(url) >= 1  # the pooled connection's session is gone
        time.sleep(0.7)
        retried: list[str] = []
        monkeypatch.setattr(plumbing.log, "warning", lambda event_, **kw: retried.append(event_))
        run = store.runs.get_run(run_id)
        assert run is not None and run.id == run_id
        assert retried == []  # the ping found the dead connection; no transaction failed
    finally:
        store.dispose()


def test_a_connection_that_died_in_use_costs_one_retry(proxied: tuple[str, TcpProxy], monkeypatch) -> None:
    """A busy connection is not pinged (a ping per checkout was one more round trip, and one more
    server transaction, for every transaction of every run), so one killed between two
    transactions fails the next — which the store retries whole on a new connection."""
    url, _proxy = proxied
    store = Store(url, retry_window_s=10)
    try:
        run_id = new_run(store)
        assert store.runs.get_run(run_id) is not None
        assert _terminate_other_sessions(url) >= 1
        retried: list[str] = []
        monkeypatch.setattr(plumbing.log, "warning", lambda event_, **kw: retried.append(event_))
        run = store.runs.get_run(run_id)
        assert run is not None and run.id == run_id
        assert retried == ["database error, retrying"]
    finally:
        store.dispose()


# --- connections that stop answering (issue 23, item 4) --------------------------------------------
QUICK = DbTimeouts(statement_s=1, lock_s=1, idle_in_transaction_s=2)


def test_every_session_starts_with_the_limits_and_the_url_wins(proxied: tuple[str, TcpProxy]) -> None:
    url, _proxy = proxied
    store = Store(url, timeouts=QUICK)
    own = Store(f"{url}?options=-c%20lock_timeout%3D7000", timeouts=QUICK)
    try:
        for s, lock in ((store, "1s"), (own, "7s")):
            with s.engine.connect() as conn:
                shown = [conn.exec_driver_sql(f"show {name}").scalar() for name in (
                    "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout")]
            assert shown == ["1s", lock, "2s"]
    finally:
        store.dispose()
        own.dispose()


@pytest.mark.timeout(90)
def test_a_pooled_connection_that_went_silent_is_dropped_and_the_write_retried(
    proxied: tuple[str, TcpProxy],
) -> None:
    url, proxy = proxied
    store = Store(url, retry_window_s=30, timeouts=QUICK)
    try:
        run_id = new_run(store)
        assert proxy.swallow() >= 1  # the pooled connection: open, acknowledged, silent
        began = time.monotonic()
        lease = store.leases.acquire_lease(run_id, owner="w", ttl_s=60)  # the old code waits here for ever
        took = time.monotonic() - began
        print(f"write after a silent connection: {took:.1f} s (answer limit {QUICK.answer_s:g} s)")
        assert lease.token == 1 and count(store, "runs", "id = :r and status = 'running'", r=run_id) == 1
    finally:
        store.dispose()


@pytest.mark.timeout(90)
def test_a_row_lock_held_by_a_silent_client_is_freed_by_the_server(proxied: tuple[str, TcpProxy]) -> None:
    """``FOR UPDATE`` behind a transaction whose client went silent: lock_timeout fails the
    wait (retried), idle_in_transaction_session_timeout ends the silent session and its lock."""
    url, proxy = proxied
    holder, store = Store(url, timeouts=QUICK), Store(url, retry_window_s=30, timeouts=QUICK)
    try:
        run_id = new_run(store)
        conn = holder.engine.connect()
        conn.exec_driver_sql("select 1 from runs where id = %(id)s for update", {"id": run_id})
        proxy.swallow()  # the holder's client goes silent mid-transaction, its lock held
        began = time.monotonic()
        store.leases.acquire_lease(run_id, owner="w", ttl_s=60)  # the old code waits here for ever
        print(f"row lock of a silent client freed after {time.monotonic() - began:.1f} s")
        assert store.runs.get_run(run_id).status == "running"
    finally:
        conn.invalidate()
        holder.dispose()
        store.dispose()
