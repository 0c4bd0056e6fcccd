"""The database's clock: the one time every worker of a fleet agrees on.

Lease expiry, heartbeats and every comparison against them are taken from the database
(PostgreSQL ``clock_timestamp()``, SQLite ``strftime('now')``), not from the worker's own clock:
a worker whose clock is minutes off would otherwise write leases that look expired to everyone
else (or never expire), and healthy runs would be taken over. The value is read inside the
caller's transaction and handed back as an aware UTC datetime, so it binds through
``UTCDateTime`` exactly like any other timestamp (SQLite compares like with like: naive UTC text).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.orm import Session

_SQLITE_NOW = text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")
_PG_NOW = text("SELECT clock_timestamp()")


def db_now(s: Session) -> datetime:
    """The database's current time (aware, UTC), read in the session's transaction."""
    if s.get_bind().dialect.name == "sqlite":
        raw = s.execute(_SQLITE_NOW).scalar_one()
        return datetime.strptime(raw, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
    value = s.execute(_PG_NOW).scalar_one()
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


__all__ = ["db_now"]
