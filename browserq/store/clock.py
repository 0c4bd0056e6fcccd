"""The database's clock: the one time every worker of a fleet agrees on.

Lease expiry, heartbeats and every comparison against them are taken from the database
(PostgreSQL ``clock_timestamp()``), not from the worker's own clock: a worker whose clock is
minutes off would otherwise write leases that look expired to everyone else (or never expire), and
healthy runs would be taken over. The value is read inside the caller's transaction and handed
back as an aware UTC datetime, so it binds through ``UTCDateTime`` exactly like any other
timestamp (SQLite compares like with like: naive UTC text).

SQLite runs inside each process: its ``'now'`` *is* this host's clock, only read through a query
and cut to milliseconds. Runs created in the same millisecond then tied on ``created_at`` and
listed in a random order, so SQLite's time is taken from the process's own clock directly, at
microseconds and never stepping back (:mod:`browserq.store.forward_clock`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.orm import Session

from browserq.store.models import utcnow

_PG_NOW = text("SELECT clock_timestamp()")


def db_now(s: Session) -> datetime:
    """The database's current time (aware, UTC): PostgreSQL's, read in the session's transaction;
    on SQLite, this process's clock (the same clock SQLite reads)."""
    if s.get_bind().dialect.name == "sqlite":
        return utcnow()
    value = s.execute(_PG_NOW).scalar_one()
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


__all__ = ["db_now"]
