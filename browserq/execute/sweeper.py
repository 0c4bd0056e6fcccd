"""The sweeper inside the workers: one process at a time across the fleet, by a database lock.

Nothing accepted by ``.delay()`` may be lost because nobody started ``browserq beat``: every
worker process runs a :class:`FleetSweeper` thread, and the one that holds the fleet's sweep lock
re-enqueues stuck runs every ``BROWSERQ_SWEEP_INTERVAL_S`` (beat may still send ``browserq.sweep``
too; sweeping twice is harmless, the run's lease dedups).

The lock lives in the run store, not in Redis: the store is the one server every deployment has
(Redis or RabbitMQ broker, any result backend), and a sweep without the store can do nothing
anyway. Both forms die with their holder, so a SIGKILLed holder never blocks the fleet:

* PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) on a connection the
  holder keeps open; the server drops it when that session ends.
* SQLite (one host): ``flock`` on a file next to the database; the kernel drops it on exit.

A lock or sweep error (the database hiccups) is logged in one line and the next tick tries again;
it never reaches the runs this process executes.
"""

from __future__ import annotations

import fcntl
import os
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Protocol

import structlog
from sqlalchemy import Connection, Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from browserq.settings import Settings
from browserq.store import Store, StoreUnavailable, normalize_url
from browserq.store.engine import DbTimeouts, create_store_engine

log = structlog.get_logger(__name__)

#: The advisory lock key of the sweep: any constant bigint; these are the bytes of "brqsweep".
PG_SWEEP_LOCK_KEY = 0x6272_7173_7765_6570
#: How long a sweep's database calls keep retrying through an outage before the tick gives up.
SWEEP_RETRY_WINDOW_S = 5.0


class SweepLock(Protocol):
    def acquire(self) -> bool:
        """True while this process holds the lock (taking it if it is free)."""

    def release(self) -> None: ...


class PgAdvisoryLock:
    """A session-level advisory lock held on a dedicated connection (no pool: closing it ends
    the session, which releases the lock)."""

    def __init__(self, database_url: str, key: int = PG_SWEEP_LOCK_KEY, timeouts: DbTimeouts | None = None) -> None:
        # The store's engine options: a silent connection is dropped, not waited on for ever.
        self._engine: Engine = create_store_engine(database_url, poolclass=NullPool, timeouts=timeouts)
        self._key = key
        self._conn: Connection | None = None

    def acquire(self) -> bool:
        if self._conn is not None:
            try:  # still our session? (a server restart or a cut connection ended it)
                self._conn.execute(text("select 1"))
                self._conn.commit()
                return True
            except Exception:
                self.release()
                raise
        conn = self._engine.connect()
        try:
            got = bool(conn.execute(text("select pg_try_advisory_lock(:k)"), {"k": self._key}).scalar())
            conn.commit()
        except Exception:
            conn.close()
            raise
        if not got:
            conn.close()
            return False
        self._conn = conn
        return True

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:  # unlock first: the server ends a closed session's backend (and its lock) a moment later
                conn.execute(text("select pg_advisory_unlock(:k)"), {"k": self._key})
                conn.commit()
            except Exception as exc:
                log.debug("unlocking the sweep lock failed; closing its session instead", error=str(exc))
            try:
                conn.invalidate()  # close the DBAPI connection: the session and its lock end
            except Exception as exc:
                log.debug("closing the sweep lock's connection failed", error=str(exc))

    def dispose(self) -> None:
        self.release()
        self._engine.dispose()


class FileLock:
    """``flock`` on a file: exclusive between processes (and between open files) on one host."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None

    def acquire(self) -> bool:
        if self._file is not None:
            return True
        handle = self.path.open("a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        except Exception:
            handle.close()
            raise
        self._file = handle
        return True

    def release(self) -> None:
        handle, self._file = self._file, None
        if handle is not None:
            handle.close()

    def dispose(self) -> None:
        self.release()


class ProcessLock:
    """An in-memory SQLite database exists in one process only: nothing to share."""

    def acquire(self) -> bool:
        return True

    def release(self) -> None:
        pass

    def dispose(self) -> None:
        pass


def sweep_lock_for(database_url: str, timeouts: DbTimeouts | None = None) -> PgAdvisoryLock | FileLock | ProcessLock:
    """The fleet-wide sweep lock for a run store URL."""
    url = make_url(normalize_url(database_url))
    if url.get_backend_name() == "postgresql":
        return PgAdvisoryLock(database_url, timeouts=timeouts)
    database = url.database or ""
    if not database or database == ":memory:" or "mode=memory" in database:
        return ProcessLock()
    path = Path(database.removeprefix("file:").split("?")[0]).expanduser()
    return FileLock(path.with_name(path.name + ".sweep.lock"))


SweepFn = Callable[[Store, Settings], int]


class FleetSweeper:
    """Runs ``sweep(store, settings)`` every ``sweep_interval_s`` while this process holds the
    fleet's sweep lock. :meth:`tick` is one step (used by the thread and by tests)."""

    def __init__(self, settings: Settings, sweep: SweepFn, *, owner: str = "") -> None:
        self.settings = settings
        self.sweep = sweep
        self.owner = owner or str(os.getpid())
        timeouts = DbTimeouts.from_settings(settings)
        self.lock = sweep_lock_for(settings.database_url, timeouts)
        self.store = Store(settings.database_url, retry_window_s=min(SWEEP_RETRY_WINDOW_S, settings.sweep_interval_s),
                           timeouts=timeouts)
        self.holding = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> int | None:
        """One sweep if this process holds the lock: the runs re-enqueued, else None. Never
        raises: a failing lock or sweep is logged and the next tick tries again."""
        try:
            held = self.lock.acquire()
        except Exception as exc:
            self._lost(f"the sweep lock is unavailable: {_first_line(exc)}")
            return None
        if not held:
            self.holding = False
            return None
        if not self.holding:
            self.holding = True
            log.info("this process now runs the fleet's sweeper", owner=self.owner)
        try:
            return self.sweep(self.store, self.settings)
        except StoreUnavailable:  # an outage, not a fault of the sweep: the runs it would find wait
            log.warning("sweep skipped: the database is unreachable; trying again next interval", owner=self.owner)
            return None
        except Exception as exc:
            log.warning("sweep failed; trying again next interval", owner=self.owner, error=_first_line(exc))
            return None

    def _lost(self, why: str) -> None:
        if self.holding:
            self.lock.release()
        self.holding = False
        log.warning("sweep skipped; trying again next interval", owner=self.owner, reason=why)

    # --- the thread ------------------------------------------------------------------------------
    def start(self) -> FleetSweeper:
        self._thread = threading.Thread(target=self._loop, name="browserq-sweeper", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        interval = self.settings.sweep_interval_s
        # A random first delay spreads the fleet's processes over the interval.
        delay = random.uniform(0.1, 1.0) * interval
        while not self._stop.wait(delay):
            self.tick()
            delay = interval

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.lock.dispose()
        self.store.dispose()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


def _first_line(error: BaseException) -> str:
    text_ = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text_[0] if text_ else ''}"[:300]
