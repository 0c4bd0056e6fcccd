"""A session client's line to the fleet: its own reply queue, requests with correlation ids, and
waits that never hang on a session that is gone.

Requests and replies travel through the broker (:mod:`browserq.sessions.routing`). When no reply
comes for a while, the client reads the session run's status once in a while: a session that
ended (idle timeout, lifetime, cancel, worker loss) raises :class:`SessionClosed` with the why its
run recorded, instead of a wait for a reply that cannot come.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import structlog
from kombu import Connection, Producer

from browserq.sessions.errors import SessionClosed
from browserq.sessions.routing import REPLY_QUEUE_PREFIX, reply_queue

log = structlog.get_logger(__name__)

#: The slice of a wait for a reply; between slices the client may look at the run's status.
WAIT_SLICE_S = 0.5
#: After this long without a reply, the run's status is read (then every as long again).
STATUS_CHECK_S = 2.0
#: Statuses a session run is over in.
ENDED = frozenset({"completed", "failed", "cancelled", "needs_review"})

#: ``why_ended()``: the why of an ended session run, or None while it is open.
WhyEnded = Callable[[], str | None]


class SessionLink:
    """One client's broker connection: publish a request, wait for the reply that matches it."""

    def __init__(self, broker_url: str) -> None:
        self.connection = Connection(broker_url)
        self.queue = reply_queue()
        self.replies = self.connection.SimpleQueue(self.queue)
        self.producer = Producer(self.connection.channel())

    def send(self, queue_name: str, body: dict[str, Any]) -> str:
        """Publish ``body`` (its correlation id and our reply queue added); returns the id."""
        # The id names our reply queue: a worker that takes the session over tells us about a
        # command its lost predecessor had started, from that command's record alone.
        correlation_id = f"{self.queue.name.removeprefix(REPLY_QUEUE_PREFIX)}-{uuid.uuid4().hex}"
        publish = self.connection.ensure(self.producer, self.producer.publish, max_retries=3)
        publish({**body, "id": correlation_id, "reply_to": self.queue.name}, exchange="", routing_key=queue_name,
                serializer="json", delivery_mode=2)
        return correlation_id

    def wait(self, correlation_id: str, timeout_s: float, why_ended: WhyEnded, session_id: str) -> dict[str, Any] | None:
        """The reply to ``correlation_id``, or None after ``timeout_s``; raises
        :class:`SessionClosed` as soon as the session's run is seen ended while waiting."""
        start = time.monotonic()
        checked = start
        while (left := start + timeout_s - time.monotonic()) > 0:
            try:
                message = self.replies.get(block=True, timeout=min(WAIT_SLICE_S, left))
            except self.replies.Empty:
                message = None
            if message is not None:
                message.ack()
                if isinstance(message.payload, dict) and message.payload.get("id") == correlation_id:
                    return message.payload
                continue  # the late reply of a request we stopped waiting for
            if time.monotonic() - checked >= STATUS_CHECK_S:
                checked = time.monotonic()
                if (why := why_ended()) is not None:
                    raise SessionClosed(why, session_id=session_id)
        return None

    def close(self) -> None:
        try:
            self.replies.close()
            if self.connection.transport.driver_type == "redis":  # no exclusive queues there
                self.queue(self.connection.default_channel).delete()
        except Exception as exc:  # the broker is gone: nothing left to clean up there
            log.debug("session reply queue not deleted", error=str(exc)[:200])
        self.connection.release()


__all__ = ["ENDED", "SessionLink", "WhyEnded"]
