"""Delivering webhooks: the ``browserq.deliver_webhook`` task, and the relay that sends it.

Every store a worker, producer or CLI opens is built with a relay (:func:`threaded_relay` or
:func:`queued_relay`, chosen in :mod:`browserq.tasks.observers`): once a transaction that
queued webhook events commits, a worker makes the first POST at once from a thread of its own
(:func:`post_now`, at most ``BROWSERQ_WEBHOOK_THREADS`` at once; the rest become tasks); a
producer or CLI sends one task per event to ``<queue>.webhooks`` (which every ``browserq worker``
consumes), and so does every retry. The relay also gives the store this process's
``BROWSERQ_NOTIFY_URL`` for runs without a URL of their own. The sweep sends any event whose
message never left or was lost (:func:`relay_overdue`). A task POSTs attempt *n* only after
claiming it in the store for longer than the POST may take (:func:`claim_hold_s`), so a
duplicate message or the sweep does nothing while it is in flight; a receiver still sees the
same ``X-Browserq-Delivery`` on a retry after a worker died mid-POST (at least once), and can
deduplicate on it.

The POST itself is :func:`browserq.webhooks.sender.post` (the egress policy, one deadline, never
raising). An answer 2xx delivers; 408, 409, 425, 429, 5xx and every failure without an answer
(a timeout, a refused or reset connection, an answer that is not HTTP) are tried again with
backoff (5 s, doubling, at most 10 min; ``BROWSERQ_WEBHOOK_MAX_ATTEMPTS`` in all); any other
answer (a 4xx: the receiver refused it), a redirect and an address the egress policy refuses
give up at once. Each POST is a ``webhook_attempts`` row.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from functools import lru_cache
from typing import Any

import structlog
from celery import Task

from browserq import __version__
from browserq.settings import Settings, get_settings
from browserq.store import Store
from browserq.store.relay import WebhookRelay
from browserq.store.webhooks import DeliveryView
from browserq.tasks.app import WEBHOOK_TASK_NAME, app
from browserq.webhooks.egress import EgressPolicy
from browserq.webhooks.sender import Answer, post
from browserq.webhooks.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

log = structlog.get_logger(__name__)

BACKOFF_FIRST_S = 5.0
BACKOFF_MAX_S = 600.0
#: Added to the POST's deadline for a claim's hold: the body is built and the answer recorded.
CLAIM_MARGIN_S = 30.0
EVENT_HEADER = "X-Browserq-Event"
DELIVERY_HEADER = "X-Browserq-Delivery"


def backoff_s(attempt: int) -> float:
    """The pause after POST number ``attempt`` failed."""
    return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (attempt - 1))


def claim_hold_s(settings: Settings) -> float:
    """How long a claimed attempt is held: past the POST's own deadline (it cannot still be in
    flight when the hold ends, so the sweep never sends an event whose POST is under way)."""
    return settings.webhook_timeout_s + CLAIM_MARGIN_S


def request_body(store: Store, delivery: DeliveryView, settings: Settings) -> bytes:
    """The JSON body: the event as recorded, plus a fresh one-time live-view link while the run
    still waits for a person (links are minted at the POST: the database never holds one)."""
    data: dict[str, Any] = {"delivery": delivery.id, **delivery.payload}
    if delivery.event == "waiting_for_human":
        data["live_url"] = store.handoffs.mint_live_token(delivery.run_id, purpose="webhook", ttl_s=settings.live_token_ttl_s)
    return json.dumps(data, separators=(",", ":"), default=str, ensure_ascii=False).encode()


def deliver(store: Store, settings: Settings, delivery_id: int, attempt: int) -> float | None:
    """Make POST number ``attempt`` of a delivery; the seconds until the next one, or None
    (delivered, given up, or not ours to make)."""
    delivery = store.webhooks.claim_webhook(delivery_id, attempt, hold_s=claim_hold_s(settings))
    if delivery is None:
        return None
    if not settings.webhook_secret:
        answer = Answer(None, "BROWSERQ_WEBHOOK_SECRET is not set on this worker: nothing is sent unsigned", 0.0)
        store.webhooks.record_webhook_attempt(delivery_id, attempt, outcome="failed", status_code=None,
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
    answer = post(delivery.url, body, headers, settings.webhook_timeout_s, EgressPolicy.from_settings(settings))
    last = attempt >= settings.webhook_max_attempts
    outcome = "delivered" if answer.delivered else "retry" if answer.retriable and not last else "failed"
    pause = backoff_s(attempt) if outcome == "retry" else None
    store.webhooks.record_webhook_attempt(delivery_id, attempt, outcome=outcome, status_code=answer.status_code,
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
    store.webhooks.mark_webhooks_sent([delivery_id for delivery_id, _ in items])


@lru_cache(maxsize=4)
def _delivery_threads(count: int) -> threading.BoundedSemaphore:
    """The first-POST threads this process may run at once (``BROWSERQ_WEBHOOK_THREADS``)."""
    return threading.BoundedSemaphore(max(count, 1))


def _post_first(store: Store, settings: Settings, delivery_id: int, slots: threading.BoundedSemaphore) -> None:
    """POST number 1 in this thread, then leave retries to the delivery task."""
    try:
        pause = deliver(store, settings, delivery_id, 1)
        if pause is not None:
            deliver_webhook.apply_async(args=[delivery_id, 2], countdown=pause)
    except Exception as exc:  # the sweep sends it again once it is overdue
        log.warning("webhook not posted now; the sweep sends it again", delivery=delivery_id, error=str(exc)[:300])
    finally:
        slots.release()


def post_now(store: Store, settings: Settings, delivery_ids: list[int]) -> list[threading.Thread]:
    """Make the first POST of each delivery in a thread of this process, at most
    ``BROWSERQ_WEBHOOK_THREADS`` at once; a POST that finds none free goes to the delivery task
    (a worker does this: the notice of a run waiting for a person must not wait for a free worker
    slot, and a slow receiver must not pile up threads)."""
    slots = _delivery_threads(settings.webhook_threads)
    threads: list[threading.Thread] = []
    queued: list[tuple[int, int]] = []
    store.webhooks.mark_webhooks_sent(delivery_ids)
    for delivery_id in delivery_ids:
        if settings.webhook_threads <= 0 or not slots.acquire(blocking=False):
            queued.append((delivery_id, 1))
            continue
        thread = threading.Thread(target=_post_first, args=(store, settings, delivery_id, slots),
                                  name="browserq-webhooks", daemon=True)
        thread.start()
        threads.append(thread)
    if queued:
        send(store, queued)
        log.info("webhook threads busy; first POSTs sent as delivery tasks", count=len(queued))
    return threads


def threaded_relay(settings: Settings) -> WebhookRelay:
    """A long-lived worker's relay: a store's new webhook events are POSTed from threads of this
    process as soon as their transaction commits (:func:`post_now`)."""

    def post_from_threads(store: Store, ids: list[int]) -> None:
        post_now(store, settings, ids)

    return WebhookRelay(settings.notify_url, post_from_threads)


def queued_relay(settings: Settings | None = None) -> WebhookRelay:
    """A producer's or a CLI command's relay (it may exit at once): a store's new webhook events
    leave as delivery tasks as soon as their transaction commits."""

    def send_tasks(store: Store, ids: list[int]) -> None:
        send(store, [(delivery_id, 1) for delivery_id in ids])

    return WebhookRelay((settings or get_settings()).notify_url, send_tasks)


def relay_overdue(store: Store) -> int:
    """(The sweep.) Send again what was never sent or whose message was lost."""
    items = store.webhooks.overdue_webhooks()
    if items:
        send(store, items)
        log.info("re-sent overdue webhook deliveries", count=len(items))
    return len(items)


__all__ = [
    "backoff_s", "deliver", "deliver_webhook", "queued_relay", "relay_overdue", "request_body", "threaded_relay",
]
