"""The webhook outbox: an event row written with the status change it reports, and every POST of it.

When a run whose ``notify_url`` is set enters ``waiting_for_human``, ``completed``, ``failed``,
``needs_review`` or ``cancelled``, :func:`queue_event` adds a
``webhook_deliveries`` row in the same transaction (so an event is never lost, nor invented by a
transaction that rolled back). Its ``event_key`` (``<run>:<event>:<n>``) is unique. After the
commit the store hands the new ids to the relay it was built with (:mod:`browserq.store.relay`;
the Celery relay, :mod:`browserq.tasks.webhooks`); rows nobody sent are found by
:meth:`~Webhooks.overdue_webhooks` at the next sweep.

A delivery task claims attempt *n* (:meth:`~Webhooks.claim_webhook`) only while the row has
made *n - 1* attempts and nobody else holds it, so a duplicate message never POSTs twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from browserq.store.clock import db_now
from browserq.store.human_models import WebhookAttempt, WebhookDelivery
from browserq.store.models import Run, RunStatus
from browserq.store.plumbing import Database

#: The statuses that are announced, by the event name they get.
NOTIFIED: frozenset[RunStatus] = frozenset({
    RunStatus.WAITING_FOR_HUMAN, RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.NEEDS_REVIEW,
    RunStatus.CANCELLED,
})
#: A pending delivery this late for its next attempt lost its message: the sweep sends another.
OVERDUE_S = 60.0
#: A new delivery nobody sent after this long (its process died after the commit) is sent by the sweep.
UNSENT_S = 10.0


@dataclass(frozen=True, slots=True)
class DeliveryView:
    """One event for one URL, as the delivery task and ``browserq show`` see it."""

    id: int
    run_id: str
    event: str
    event_key: str
    url: str
    payload: dict[str, Any]
    status: str
    created_at: datetime
    delivered_at: datetime | None
    attempts: int
    last_error: str | None


def _view(row: WebhookDelivery) -> DeliveryView:
    return DeliveryView(row.id, row.run_id, row.event, row.event_key, row.url, dict(row.payload), row.status,
                        row.created_at, row.delivered_at, row.attempts, row.last_error)


def event_payload(run: Run, event: str, now: datetime) -> dict[str, Any]:
    """What the receiver is told: the run's result dict (outputs and messages as the run recorded
    them, secrets already redacted) and where it stands. Params are never sent."""
    error = None
    if run.error_code:
        error = {"code": run.error_code, "message": run.error_message, "step": run.error_step_path}
    return {
        "event": event,
        "occurred_at": now.isoformat(),
        "run_id": run.id,
        "template": f"{run.template_name}@{run.template_version}",
        "result": {
            "run_id": run.id,
            "status": event,
            "outputs": run.outputs or {},
            "error": error,
            "warnings": list(run.warnings or []),
        },
    }


def queue_event(s: Session, run: Run, to: RunStatus, now: datetime, *, fleet_notify_url: str | None) -> None:
    """(Inside a transition's transaction.) Queue the event of ``run`` entering ``to`` when the run
    has somewhere to send it: its own URL, else the fleet-wide one of the process recording it
    (then kept as the run's own, so every later event of the run goes to the same place whoever
    records it). The transaction hands the new row to its announcer once it commits."""
    if to not in NOTIFIED or not (run.notify_url or fleet_notify_url):
        return
    run.notify_url = run.notify_url or fleet_notify_url
    seen = s.scalar(
        select(func.count()).select_from(WebhookDelivery)
        .where(WebhookDelivery.run_id == run.id, WebhookDelivery.event == to.value)
    ) or 0
    row = WebhookDelivery(
        run_id=run.id, event=to.value, event_key=f"{run.id}:{to.value}:{seen + 1}", url=run.notify_url,
        payload=event_payload(run, to.value, now), status="pending", created_at=now,
        next_attempt_at=now, attempts=0,
    )
    s.add(row)
    s.info.setdefault("webhooks", []).append(row)


class Webhooks:
    """The outbox of run events and every POST of one (``store.webhooks``); the events are queued
    by the transitions that report them (:func:`queue_event`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def claim_webhook(self, delivery_id: int, attempt: int, *, hold_s: float) -> DeliveryView | None:
        """Hold the delivery for POST number ``attempt`` (for ``hold_s``); None when it is not
        pending, another attempt was made or is under way (a duplicate message: do nothing)."""
        def body(s: Session, _retried: bool) -> DeliveryView | None:
            row = s.get(WebhookDelivery, delivery_id, with_for_update=self.db.pg)
            now = db_now(s)
            if row is None or row.status != "pending" or row.attempts != attempt - 1:
                return None
            if row.claimed_until is not None and row.claimed_until > now:
                return None
            row.claimed_until = now + timedelta(seconds=hold_s)
            return _view(row)

        return self.db.tx(f"claiming webhook delivery {delivery_id}", body, write=True)

    def record_webhook_attempt(
        self, delivery_id: int, attempt: int, *, outcome: str, status_code: int | None, error: str | None,
        duration_ms: float, retry_in_s: float | None = None,
    ) -> None:
        """One POST's answer; ``outcome``: ``delivered``, ``retry`` (due again in ``retry_in_s``)
        or ``failed`` (given up)."""
        def body(s: Session, _retried: bool) -> None:
            row = s.get(WebhookDelivery, delivery_id, with_for_update=self.db.pg)
            if row is None or row.attempts >= attempt:
                return  # recorded by our earlier, unacknowledged try
            now = db_now(s)
            s.add(WebhookAttempt(delivery_id=delivery_id, attempt=attempt, at=now, status_code=status_code,
                                 error=error, duration_ms=duration_ms))
            row.attempts, row.claimed_until, row.last_error = attempt, None, error
            if outcome == "delivered":
                row.status, row.delivered_at, row.next_attempt_at = "delivered", now, None
            elif outcome == "failed":
                row.status, row.next_attempt_at = "failed", None
            else:
                row.next_attempt_at = now + timedelta(seconds=retry_in_s or 0.0)

        self.db.tx(f"recording webhook delivery {delivery_id}", body, write=True)

    def mark_webhooks_sent(self, delivery_ids: list[int]) -> None:
        """A delivery task was sent for each (the sweep leaves them alone until they are overdue)."""
        def body(s: Session, _retried: bool) -> None:
            now = db_now(s)
            for row in s.scalars(select(WebhookDelivery).where(WebhookDelivery.id.in_(delivery_ids))):
                row.dispatched_at = now

        if delivery_ids:
            self.db.tx("marking webhook deliveries sent", body, write=True)

    def overdue_webhooks(self, limit: int = 500) -> list[tuple[int, int]]:
        """``(delivery id, next attempt)`` of pending deliveries whose message was never sent or
        was lost: the sweep sends them again (the claim makes a late original harmless)."""
        def body(s: Session) -> list[tuple[int, int]]:
            now = db_now(s)  # next_attempt_at and claimed_until were written with it
            query = (
                select(WebhookDelivery.id, WebhookDelivery.attempts)
                .where(
                    WebhookDelivery.status == "pending",
                    or_(WebhookDelivery.claimed_until.is_(None), WebhookDelivery.claimed_until < now),
                    or_(
                        WebhookDelivery.next_attempt_at < now - timedelta(seconds=OVERDUE_S),
                        (WebhookDelivery.dispatched_at.is_(None))
                        & (WebhookDelivery.created_at < now - timedelta(seconds=UNSENT_S)),
                    ),
                )
                .order_by(WebhookDelivery.id)
                .limit(limit)
            )
            return [(row.id, row.attempts + 1) for row in s.execute(query)]

        return self.db.read("finding overdue webhook deliveries", body)

    def webhook_deliveries(self, run_id: str) -> list[DeliveryView]:
        """The run's events and how their delivery went, oldest first."""
        query = select(WebhookDelivery).where(WebhookDelivery.run_id == run_id).order_by(WebhookDelivery.id)
        return self.db.read(f"reading webhook deliveries of run {run_id}",
                          lambda s: [_view(row) for row in s.scalars(query)])

    def webhook_attempts(self, delivery_id: int) -> list[dict[str, Any]]:
        """Every POST of one delivery: ``{attempt, at, status_code, error, duration_ms}``."""
        query = select(WebhookAttempt).where(WebhookAttempt.delivery_id == delivery_id).order_by(WebhookAttempt.id)
        return self.db.read(
            f"reading attempts of webhook delivery {delivery_id}",
            lambda s: [{"attempt": a.attempt, "at": a.at, "status_code": a.status_code, "error": a.error,
                        "duration_ms": a.duration_ms} for a in s.scalars(query)],
        )


    def redeliver_webhooks(
        self, *, run_id: str | None = None, failed_since: timedelta | None = None, dry_run: bool = False,
        limit: int = 1000,
    ) -> list[DeliveryView]:
        """Send failed events again, as new deliveries (``<event key>:redelivery:<n>``, pending, the
        event's payload and URL) handed to the relay like any new event; the failed rows stay as
        they are. An event counts when its newest delivery failed: of ``run_id``, or whose last
        POST was within ``failed_since``. ``dry_run``: the failed deliveries, nothing queued."""
        if run_id is None and failed_since is None:
            raise ValueError("give a run or failed_since")
        action = f"redelivering failed webhooks of {run_id or 'every run'}"

        def body(s: Session, _retried: bool) -> list[DeliveryView]:
            now = db_now(s)  # the attempts were recorded with it
            query = select(WebhookDelivery).where(WebhookDelivery.status == "failed")
            if run_id is not None:
                query = query.where(WebhookDelivery.run_id == run_id)
            if failed_since is not None:
                last = (select(func.max(WebhookAttempt.at)).where(WebhookAttempt.delivery_id == WebhookDelivery.id)
                        .scalar_subquery())
                query = query.where(last >= now - failed_since)
            failed = s.scalars(self.db.locked(query.order_by(WebhookDelivery.id).limit(limit))).all()
            out: list[DeliveryView] = []
            for row in failed:
                root = ":".join(row.event_key.split(":")[:3])
                later = s.scalars(select(WebhookDelivery.event_key).where(
                    WebhookDelivery.run_id == row.run_id, WebhookDelivery.id > row.id,
                    or_(WebhookDelivery.event_key == root, WebhookDelivery.event_key.startswith(f"{root}:", autoescape=True)),
                )).all()
                if later:  # redelivered already: that newer row is the event's delivery now
                    continue
                if dry_run:
                    out.append(_view(row))
                    continue
                again = WebhookDelivery(
                    run_id=row.run_id, event=row.event, url=row.url, payload=dict(row.payload), status="pending",
                    event_key=f"{root}:redelivery:{self._redeliveries(s, row.run_id, root) + 1}",
                    created_at=now, next_attempt_at=now, attempts=0,
                )
                s.add(again)
                s.flush()
                s.info.setdefault("webhooks", []).append(again)
                out.append(_view(again))
            return out

        return self.db.tx(action, body, write=not dry_run)

    @staticmethod
    def _redeliveries(s: Session, run_id: str, root: str) -> int:
        return s.scalar(select(func.count()).select_from(WebhookDelivery).where(
            WebhookDelivery.run_id == run_id, WebhookDelivery.event_key.startswith(f"{root}:redelivery:", autoescape=True),
        )) or 0


__all__ = ["NOTIFIED", "DeliveryView", "Webhooks", "event_payload", "queue_event"]
