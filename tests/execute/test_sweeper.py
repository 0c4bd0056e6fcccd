"""The sweeper inside the workers: one process at a time across the fleet, through the store's lock,
and a lock backend that hiccups never stops a worker (real PostgreSQL and SQLite files)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from browserq.execute.sweeper import FileLock, FleetSweeper, PgAdvisoryLock
from browserq.settings import Settings
from browserq.store import Store
from tests.conftest import REPO, _create_database, _drop_database, make_settings
from tests.store.tcp_proxy import TcpProxy


def recorder(log: list[str], name: str) -> Callable[[Store, Settings], int]:
    def sweep(store: Store, settings: Settings) -> int:
        store.leases.stuck_runs(queued_older_than_s=settings.requeue_after_s)  # a real read of the store
        log.append(name)
        return 0

    return sweep


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A database of this module's own: the fleet's sweep lock is per database, and the session's
    shared database has long-lived workers (tests/e2e) whose sweepers hold it."""
    name = f"browserq_sweeper_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    _create_database(name)
    yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    _drop_database(name)


@pytest.fixture
def sweepers() -> Iterator[Callable[..., FleetSweeper]]:
    made: list[FleetSweeper] = []

    def make(settings: Settings, name: str, log: list[str]) -> FleetSweeper:
        sweeper = FleetSweeper(settings, recorder(log, name), owner=name)
        made.append(sweeper)
        return sweeper

    yield make
    for sweeper in made:
        sweeper.stop()


def _migrated(settings: Settings) -> Settings:
    store = Store(settings.database_url)
    store.schema.upgrade()
    store.dispose()
    return settings


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_one_sweeper_at_a_time_and_the_next_takes_over(backend, tmp_path: Path, pg_url: str, sweepers) -> None:
    url = pg_url if backend == "postgresql" else f"sqlite:///{tmp_path / 'browserq.db'}"
    settings = _migrated(make_settings(tmp_path, database_url=url))
    log: list[str] = []
    a, b = sweepers(settings, "a", log), sweepers(settings, "b", log)
    assert isinstance(a.lock, PgAdvisoryLock if backend == "postgresql" else FileLock)
    assert a.tick() == 0 and b.tick() is None
    assert a.tick() == 0 and b.tick() is None  # the holder keeps it
    assert log == ["a", "a"]
    a.stop()  # the holder goes away (a clean shutdown)
    assert b.tick() == 0
    assert log == ["a", "a", "b"] and b.holding


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_a_killed_holder_frees_the_lock(backend, tmp_path: Path, pg_url: str, sweepers) -> None:
    """SIGKILL leaves no chance to unlock: the lock must die with the process anyway."""
    url = pg_url if backend == "postgresql" else f"sqlite:///{tmp_path / 'browserq.db'}"
    settings = _migrated(make_settings(tmp_path, database_url=url))
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from browserq.execute.sweeper import sweep_lock_for
            lock = sweep_lock_for({url!r})
            assert lock.acquire()
            print("held", flush=True)
            time.sleep(600)
        """)],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        log: list[str] = []
        waiting = sweepers(settings, "waiting", log)
        assert waiting.tick() is None
        holder.kill()
        holder.wait(10)
        for _ in range(50):  # the server notices the closed session at once; allow it a moment
            if waiting.tick() == 0:
                break
        assert log == ["waiting"]
    finally:
        holder.kill()
        holder.wait(10)


def test_lock_backend_hiccup_is_survived_and_the_fleet_fails_over(tmp_path: Path, pg_url: str, sweepers) -> None:
    settings = _migrated(make_settings(tmp_path, database_url=pg_url))
    url = make_url(pg_url)
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432).start()
    through_proxy = settings.model_copy(update={
        "database_url": url.set(port=proxy.port).render_as_string(hide_password=False)
    })
    log: list[str] = []
    flaky, steady = sweepers(through_proxy, "flaky", log), sweepers(settings, "steady", log)
    try:
        assert flaky.tick() == 0 and steady.tick() is None
        proxy.cut()  # the lock holder's database connection dies
        assert flaky.tick() is None  # no exception: logged, the next tick tries again
        assert not flaky.holding
        assert steady.tick() == 0  # the server ended flaky's session, and its lock with it
        _restore(proxy)
        assert flaky.tick() is None  # steady holds it now
        steady.stop()
        assert flaky.tick() == 0
        assert log == ["flaky", "steady", "flaky"]
    finally:
        proxy.stop()


def _restore(proxy: TcpProxy) -> None:
    """Reopen the port (its old listener may take a moment to let go of it)."""
    for _ in range(100):
        try:
            proxy.restore()
            return
        except OSError:
            time.sleep(0.05)
    proxy.restore()


def test_sweeper_thread_keeps_running_while_the_database_is_unreachable(tmp_path: Path, sweepers) -> None:
    """An unreachable store (nothing listens on the port): every tick fails, the thread lives on."""
    settings = make_settings(tmp_path, database_url="postgresql+psycopg://postgres@127.0.0.1:1/none",
                             sweep_interval_s=1)
    log: list[str] = []
    sweeper = sweepers(settings, "lonely", log).start()
    for _ in range(3):
        assert sweeper.tick() is None
    assert sweeper.alive and log == []


def test_a_sweep_that_meets_an_outage_is_skipped_quietly(tmp_path: Path, sweepers) -> None:
    """The lock holds but the store is out mid-sweep: the tick is skipped with one line that says
    the database is unreachable — no exception class, which reads like a run that gave up."""
    from structlog.testing import capture_logs

    from browserq.store.errors import StoreUnavailable

    settings = _migrated(make_settings(tmp_path))

    def outage(store: Store, settings: Settings) -> int:
        raise StoreUnavailable("looking for stuck runs")

    sweeper = FleetSweeper(settings, outage, owner="during-outage")
    try:
        with capture_logs() as logs:
            assert sweeper.tick() is None
        lines = [entry["event"] for entry in logs]
        assert any("database is unreachable" in line for line in lines), lines
        assert "StoreUnavailable" not in repr(logs)
        assert sweeper.holding  # the lock is kept: the next interval sweeps again
    finally:
        sweeper.stop()
