"""Delivering webhooks: the ``browserq.deliver_webhook`` task, and the relay that sends it.

Every store a worker, producer or CLI opens gets :func:`attach_relay`: once a transaction that
queued webhook events commits, a worker makes the first POST at once from a thread of its own
(:func:`post_now`); a producer or CLI sends one task per event to ``<queue>.webhooks`` (which
every ``browserq worker`` consumes), and so does every retry. The sweep sends any event whose message never left or was lost
(:func:`relay_overdue`). A task POSTs attempt *n* only after claiming it in the store, so a
duplicate message does nothing; a receiver still sees the same ``X-Browserq-Delivery`` on a
retry after a worker died mid-POST (at least once), and can deduplicate on it.

An answer 2xx delivers; 408, 409, 425, 429, 5xx, a timeout or a refused connection are tried
again with backoff (5 s, doubling, at most 10 min; ``BROWSERQ_WEBHOOK_MAX_ATTEMPTS`` in all); any
other answer (a 4xx: the receiver refused it) and a redirect give up at once. Each POST is a
``webhook_attempts`` row.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import structlog
from celery import Task

from browserq import __version__
from browserq.settings import Settings, get_settings
from browserq.store import Store
from browserq.store.webhooks import DeliveryView
from browserq.tasks.app import WEBHOOK_TASK_NAME, app
from browserq.webhooks.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

log = structlog.get_logger(__name__)

BACKOFF_FIRST_S = 5.0
BACKOFF_MAX_S = 600.0
RETRIED_STATUSES = frozenset({408, 409, 425, 429})
EVENT_HEADER = "X-Browserq-Event"
DELIVERY_HEADER = "X-Browserq-Delivery"


@dataclass(frozen=True)
class Answer:
    """What one POST got: a status code, or an error (no answer)."""

    status_code: int | None
    error: str | None
    duration_ms: float

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def retriable(self) -> bool:
        code = self.status_code
        return code is None or code in RETRIED_STATUSES or code >= 500


def backoff_s(attempt: int) -> float:
    """The pause after POST number ``attempt`` failed."""
    return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (attempt - 1))


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A receiver that redirects is misconfigured: the signed body is not re-sent elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def post(url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> Answer:
    """One POST; never raises."""
    started = time.monotonic()
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with _opener.open(request, timeout=timeout_s) as response:
            response.read(65536)
            code, error = response.status, None
    except urllib.error.HTTPError as exc:
        code, error = exc.code, f"HTTP {exc.code} {exc.reason}"[:300]
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        code, error = None, f"{type(reason).__name__}: {reason}"[:300]
    return Answer(code, error, (time.monotonic() - started) * 1000)


def request_body(store: Store, delivery: DeliveryView, settings: Settings) -> bytes:
    """The JSON body: the event as recorded, plus a fresh one-time live-view link while the run
    still waits for a person (links are minted at the POST: the database never holds one)."""
    data: dict[str, Any] = {"delivery": delivery.id, **delivery.payload}
    if delivery.event == "waiting_for_human":
        data["live_url"] = store.mint_live_token(delivery.run_id, purpose="webhook", ttl_s=settings.live_token_ttl_s)
    return json.dumps(data, separators=(",", ":"), default=str, ensure_ascii=False).encode()


def deliver(store: Store, settings: Settings, delivery_id: int, attempt: int) -> float | None:
    """Make POST number ``attempt`` of a delivery; the seconds until the next one, or None
    (delivered, given up, or not ours to make)."""
    delivery = store.claim_webhook(delivery_id, attempt, hold_s=settings.webhook_timeout_s + 30)
    if delivery is None:
        return None
    if not settings.webhook_secret:
        answer = Answer(None, "BROWSERQ_WEBHOOK_SECRET is not set on this worker: nothing is sent unsigned", 0.0)
        store.record_webhook_attempt(delivery_id, attempt, outcome="failed", status_code=None,
                                     error=answer.error, duration_ms=0.0)
        log.error("webhook not sent", delivery=delivery_id, error=answer.error)
        return None
    body = request_body(store, delivery, settings)
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json", "User-Agent": f"browserq-webhooks/{__version__}",
        EVENT_HEADER: delivery.event, DELIVERY_HEADER: str(delivery.id),
        TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: sign(settings.webhook_secret, timestamp, body),
    }
    answer = post(delivery.url, body, headers, settings.webhook_timeout_s)
    last = attempt >= settings.webhook_max_attempts
    outcome = "delivered" if answer.delivered else "retry" if answer.retriable and not last else "failed"
    pause = backoff_s(attempt) if outcome == "retry" else None
    store.record_webhook_attempt(delivery_id, attempt, outcome=outcome, status_code=answer.status_code,
                                 error=answer.error, duration_ms=answer.duration_ms, retry_in_s=pause)
    log.log(logging.INFO if answer.delivered else logging.WARNING, f"webhook {outcome}", delivery=delivery_id,
            run_id=delivery.run_id, run_event=delivery.event, attempt=attempt, status_code=answer.status_code, error=answer.error,
            duration_ms=round(answer.duration_ms))
    return pause


@lru_cache(maxsize=1)
def _store() -> Store:
    """The store delivery tasks use in this process (they change no run's status: no relay)."""
    return Store.from_settings(get_settings())


@app.task(name=WEBHOOK_TASK_NAME, bind=True, acks_late=True, max_retries=None)
def deliver_webhook(self: Task, delivery_id: int, attempt: int = 1) -> str:
    """POST one run event (args: the delivery id and the attempt number, nothing secret)."""
    pause = deliver(_store(), get_settings(), delivery_id, attempt)
    if pause is None:
        return "done"
    raise self.retry(args=[delivery_id, attempt + 1], countdown=pause)


def send(store: Store, items: list[tuple[int, int]]) -> None:
    """One delivery task per ``(delivery id, attempt)``; stamped as sent in the store."""
    for delivery_id, attempt in items:
        deliver_webhook.apply_async(args=[delivery_id, attempt])
    store.mark_webhooks_sent([delivery_id for delivery_id, _ in items])


def post_now(store: Store, settings: Settings, delivery_ids: list[int]) -> threading.Thread:
    """Make the first POST of each delivery in a thread of this process, then leave retries to
    the delivery task. A worker does this: the notice of a run waiting for a person must not
    wait for a free worker slot (the waiting run holds its own)."""
    def post_each() -> None:
        for delivery_id in delivery_ids:
            try:
                pause = deliver(store, settings, delivery_id, 1)
                if pause is not None:
                    deliver_webhook.apply_async(args=[delivery_id, 2], countdown=pause)
            except Exception as exc:  # the sweep sends it again once it is overdue
                log.warning("webhook not posted now; the sweep sends it again", delivery=delivery_id,
                            error=str(exc)[:300])

    store.mark_webhooks_sent(delivery_ids)
    thread = threading.Thread(target=post_each, name="browserq-webhooks", daemon=True)
    thread.start()
    return thread


def attach_relay(store: Store, settings: Settings | None = None) -> Store:
    """Send ``store``'s new webhook events as soon as their transaction commits: POSTed from a
    thread of this process when ``settings`` are given (a long-lived worker), else as delivery
    tasks (a producer or a CLI command, which may exit at once)."""
    def relay(ids: list[int]) -> None:
        if settings is not None:
            post_now(store, settings, ids)
        else:
            send(store, [(delivery_id, 1) for delivery_id in ids])

    store.webhook_listener = relay
    return store


def relay_overdue(store: Store) -> int:
    """(The sweep.) Send again what was never sent or whose message was lost."""
    items = store.overdue_webhooks()
    if items:
        send(store, items)
        log.info("re-sent overdue webhook deliveries", count=len(items))
    return len(items)


__all__ = ["attach_relay", "backoff_s", "deliver", "deliver_webhook", "relay_overdue", "request_body"]
