"""The tables of a person in the loop (migration ``0007``): handoffs, live-view tokens and webhook
deliveries with their attempts.

* ``handoffs``: one row per time a run waited for a person — why, until when, how it ended.
* ``live_tokens``: one-time, expiring capabilities to open a handoff's live view. Only the
  SHA-256 of a token is stored, so the database never holds one that works.
* ``webhook_deliveries``: an outbox. The row is written in the same transaction as the status
  change it reports (so no event is lost or sent twice: ``event_key`` is unique), then a Celery
  task POSTs it; ``webhook_attempts`` records every try.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from browserq.store.models import Base, BigIntPK, JSONType, UTCDateTime, utcnow


class Handoff(Base):
    """One wait for a person. ``outcome`` is NULL while the run waits."""

    __tablename__ = "handoffs"
    __table_args__ = (Index("ix_handoffs_run_id_id", "run_id", "id"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    run_attempt: Mapped[int] = mapped_column(Integer)
    #: The step that asked (an explicit ``handoff`` step) or after which the trigger fired.
    step_path: Mapped[str] = mapped_column(String(200))
    #: ``step`` (``action: handoff``) or ``trigger`` (the template's ``handoff: when_present``).
    kind: Mapped[str] = mapped_column(String(20))
    message: Mapped[str] = mapped_column(Text)
    #: What means "done", readably (``present '#done'``, ``absent '#captcha'``); NULL: a person
    #: must press Continue.
    until: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    deadline_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: ``condition`` | ``continued`` | ``gave_up`` | ``timeout`` | ``cancelled`` | ``interrupted``.
    outcome: Mapped[str | None] = mapped_column(String(20))
    #: Where the worker serves this handoff's live view (no token in it); NULL: none.
    live_base_url: Mapped[str | None] = mapped_column(Text)
    #: Inputs forwarded by the person (recorded as step attempts as well).
    inputs: Mapped[int] = mapped_column(Integer, default=0)


class LiveToken(Base):
    """A one-time capability to open one handoff's live view, until ``expires_at``."""

    __tablename__ = "live_tokens"
    __table_args__ = (
        Index("ix_live_tokens_handoff_id", "handoff_id"),
        Index("ix_live_tokens_run_id", "run_id"),  # 0008: retention deletes by run
    )

    #: SHA-256 (hex) of the token; the token itself is only ever in the URL handed out.
    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    handoff_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("handoffs.id", ondelete="CASCADE")
    )
    #: Who asked for it: ``worker`` (progress meta, show), ``webhook``, ``cli``.
    purpose: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class WebhookDelivery(Base):
    """One event of one run to POST to one URL (the outbox row)."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_run_id", "run_id"),
        Index("ix_webhook_deliveries_status_next_attempt_at", "status", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    #: ``waiting_for_human`` | ``completed`` | ``failed`` | ``needs_review`` | ``cancelled``.
    event: Mapped[str] = mapped_column(String(30))
    #: ``<run id>:<event>:<n>``: one delivery per event, however often the transition is retried.
    event_key: Mapped[str] = mapped_column(String(120), unique=True)
    url: Mapped[str] = mapped_column(Text)
    #: The JSON body's data (the run's result, already redacted), fixed when the event happened.
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType)
    #: ``pending`` | ``delivered`` | ``failed`` (gave up).
    status: Mapped[str] = mapped_column(String(20), default="pending")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    #: When a delivery task was last sent for it (NULL: not yet; the sweep relays it).
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: When the next POST is due (the sweep re-sends a delivery overdue by a minute: a lost message).
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: A delivery task holds the row until then while it POSTs (a second message for the same
    #: attempt finds it claimed, or already made, and does nothing).
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)


class WebhookAttempt(Base):
    """One POST of a delivery: the answer or the error."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (Index("ix_webhook_attempts_delivery_id", "delivery_id"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    delivery_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("webhook_deliveries.id", ondelete="CASCADE")
    )
    attempt: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[float | None] = mapped_column(Float)


__all__ = ["Handoff", "LiveToken", "WebhookAttempt", "WebhookDelivery"]
