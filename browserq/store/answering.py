"""PostgreSQL connections that never wait for ever, and the session limits they start with.

A connection that stops answering while its TCP connection stays up (a NAT or load balancer that
lost its state, a frozen host whose kernel still acknowledges) is not noticed by TCP keepalives
or ``tcp_user_timeout``: every packet is acknowledged, no answer comes. So the client bounds its
own wait: every wait of a psycopg connection for the server (a statement, its rows, a commit)
ends after ``DbTimeouts.answer_s``; the connection is then closed and an ``OperationalError``
raised, which the store treats like any lost connection (the transaction is retried on a new
one). The server bounds its side with the session settings ``statement_timeout``,
``lock_timeout`` and ``idle_in_transaction_session_timeout`` (``DbTimeouts.pg_options``).

:func:`install_timeouts` puts both on an engine (SQLAlchemy's ``do_connect`` hook): the store's, the
migrations', the sweep lock's, and Celery's database result backend's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

try:  # what psycopg's own wait raises when its timeout ends (psycopg 3.3; private, so guarded)
    from psycopg.errors import _WaitTimeout

    _CLIENT_TIMEOUTS: tuple[type[Exception], ...] = (_WaitTimeout,)
except ImportError:  # pragma: no cover - another psycopg: the server-side limits still hold
    _CLIENT_TIMEOUTS = ()
from sqlalchemy import Engine, event

#: How long a PostgreSQL connection attempt may take, unless the URL says otherwise.
PG_CONNECT_TIMEOUT_S = 10
#: libpq options that make a dead server noticed on an open connection (unless the URL sets them):
#: TCP keepalives for idle connections, and a limit on how long sent data may stay unacknowledged
#: (without it, a write to a vanished host waits for the kernel's retransmission timeout).
PG_LIVENESS_OPTIONS: dict[str, int] = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,
}
#: How much longer than ``statement_timeout`` the client waits for any answer of the server
#: before it drops the connection: by then the server would have cancelled the statement and
#: said so, so its silence means the connection is dead (a lost NAT flow, a frozen host).
PG_ANSWER_MARGIN_S = 5.0


@dataclass(frozen=True)
class DbTimeouts:
    """How long the database may take before a statement, a lock wait or an idle transaction is
    given up (seconds; 0: no limit). Sent to PostgreSQL as session settings; a statement the
    server leaves unanswered for ``statement_s`` + ``PG_ANSWER_MARGIN_S`` drops the connection
    on the client side (``psycopg`` only), so a stalled connection is retried, never waited on."""

    statement_s: float = 10.0
    lock_s: float = 5.0
    idle_in_transaction_s: float = 30.0

    @classmethod
    def from_settings(cls, settings: Any) -> DbTimeouts:
        default = cls()
        return cls(getattr(settings, "db_statement_timeout_s", default.statement_s),
                   getattr(settings, "db_lock_timeout_s", default.lock_s),
                   getattr(settings, "db_idle_in_transaction_timeout_s", default.idle_in_transaction_s))

    @property
    def answer_s(self) -> float | None:
        """The longest the client waits for the server's answer (None: for ever)."""
        return self.statement_s + PG_ANSWER_MARGIN_S if self.statement_s > 0 else None

    def pg_options(self) -> str:
        """libpq's ``options``: the three limits as session settings, in milliseconds."""
        limits = (("statement_timeout", self.statement_s), ("lock_timeout", self.lock_s),
                  ("idle_in_transaction_session_timeout", self.idle_in_transaction_s))
        return " ".join(f"-c {name}={round(seconds * 1000)}" for name, seconds in limits)


#: The text of the error a dropped connection raises (also what the tests look for in logs).
NO_ANSWER = "the database sent no answer"


class AnsweringConnection(psycopg.Connection[Any]):
    """A psycopg connection whose waits for the server end after ``answer_s`` (None: never)."""

    answer_s: float | None = None

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        limit = timeout if timeout is not None else self.answer_s
        try:
            return super().wait(gen, interval=interval, timeout=limit)
        except _CLIENT_TIMEOUTS:
            if timeout is not None:  # a wait the caller bounded itself (notifies): theirs
                raise
            self.close()  # its state is unknown mid-protocol: never reused
            raise psycopg.OperationalError(
                f"{NO_ANSWER} within {limit:g} s (statement_timeout + {PG_ANSWER_MARGIN_S:g} s) "
                "while the connection stayed open: it was dropped, to be retried on a new one"
            ) from None


def connect_defaults(timeouts: DbTimeouts) -> dict[str, Any]:
    """libpq options every PostgreSQL connection of browserq starts with (the URL may override
    each): a connect timeout, TCP liveness, and the session limits."""
    return {"connect_timeout": PG_CONNECT_TIMEOUT_S, **PG_LIVENESS_OPTIONS, "options": timeouts.pg_options()}


def install_timeouts(engine: Engine, timeouts: DbTimeouts) -> None:
    """Connect ``engine``'s psycopg connections as :class:`AnsweringConnection` with the limits
    of ``timeouts`` (options the URL sets itself win; an ``options`` of the URL comes first)."""
    if engine.dialect.name != "postgresql" or engine.dialect.driver != "psycopg":
        return
    defaults = connect_defaults(timeouts)
    answering = bool(_CLIENT_TIMEOUTS)  # else plain connections: only the server bounds waits

    @event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: dict[str, Any]) -> psycopg.Connection[Any]:
        for key, value in defaults.items():
            if key == "options" and cparams.get("options"):
                cparams["options"] = f"{value} {cparams['options']}"
            else:
                cparams.setdefault(key, value)
        if not answering:
            return psycopg.Connection.connect(*cargs, **cparams)
        connection = AnsweringConnection.connect(*cargs, **cparams)
        connection.answer_s = timeouts.answer_s
        return connection


@contextmanager
def patient(dbapi_connection: Any) -> Iterator[None]:
    """No answer limit on this connection meanwhile (a migration of a large database may take long)."""
    before = getattr(dbapi_connection, "answer_s", None)
    if isinstance(dbapi_connection, AnsweringConnection):
        dbapi_connection.answer_s = None
    try:
        yield
    finally:
        if isinstance(dbapi_connection, AnsweringConnection):
            dbapi_connection.answer_s = before


def celery_engine_callback(timeouts: DbTimeouts) -> Any:
    """For Celery's ``database_engine_callback``: its result backend's engine gets the same limits."""

    def callback(engine: Engine) -> None:
        install_timeouts(engine, timeouts)

    return callback


__all__ = ["NO_ANSWER", "PG_ANSWER_MARGIN_S", "PG_CONNECT_TIMEOUT_S", "PG_LIVENESS_OPTIONS", "AnsweringConnection", "DbTimeouts", "celery_engine_callback", "connect_defaults", "install_timeouts", "patient"]
