"""How a session's messages travel: through the broker the fleet already uses (Redis or
RabbitMQ, through kombu), never by polling the database.

Each session has a command queue of its own, ``bq.session.<run id>``: the client publishes its
commands there (a correlation id and the name of its own reply queue in each), and whichever
worker process holds the session consumes it. A process consumes the queues of all the sessions it
holds with ONE kombu consumer on a daemon thread with its own broker connection
(:class:`CommandConsumer`); queues are added and removed as sessions open and close. A command is
acknowledged after it ran: a command in flight when its worker dies is delivered again to the next
holder, which finds its step record and never replays it (``docs/sessions.md``); one that never
started is dropped once its start window (``START_WINDOW_S``) has passed.
Replies go to the client's reply queue by the default exchange (:class:`Publisher`).
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import structlog
from kombu import Connection, Consumer, Producer, Queue
from kombu.message import Message

log = structlog.get_logger(__name__)

#: A session's command queue is this + its run id.
COMMAND_QUEUE_PREFIX = "bq.session."
#: A client's reply queue is this + a random id.
REPLY_QUEUE_PREFIX = "bq.reply."
#: How often the consumer thread looks at its to-do list when no message arrives.
CONSUMER_TICK_S = 0.1
#: Pause before the consumer thread connects again after losing its broker connection.
RECONNECT_PAUSE_S = 1.0

#: A client waits for a command's reply its timeout plus this margin, then gives up.
REPLY_MARGIN_S = 30.0
#: A command that has not started this long after its client sent it (on the database's clock,
#: which client and worker agree on) never starts: it could otherwise still run after its client
#: gave up — a command taken by a worker that died before starting it comes back on Redis only
#: after the broker's visibility timeout (an hour), and the client may have sent it again by then.
#: Started within the window, it ends within its timeout, before the client stops waiting.
START_WINDOW_S = REPLY_MARGIN_S - 10.0


def clock_offset_s(database_now: datetime) -> float:
    """How far the database's clock is ahead of this process's (negative: behind)."""
    return database_now.timestamp() - time.time()


def start_by(offset_s: float) -> float:
    """A command's ``start_by``, sent now: the database's time after which it must not start."""
    return time.time() + offset_s + START_WINDOW_S


def too_late(body: dict[str, Any], offset_s: float) -> bool:
    """Whether ``body``'s start window has passed (a message without one never expires)."""
    deadline = body.get("start_by")
    return isinstance(deadline, int | float) and time.time() + offset_s > deadline


#: ``on_message(body, done)``: a command arrived; call ``done()`` once it ran (acks it).
OnMessage = Callable[[dict[str, Any], Callable[[], None]], None]


def command_queue_name(run_id: str) -> str:
    return f"{COMMAND_QUEUE_PREFIX}{run_id}"


def command_queue(name: str) -> Queue:
    """A session's command queue: durable and never auto-deleted (it must outlive the worker that
    holds the session, so another can take it over); deleted when the session ends."""
    return Queue(name, routing_key=name, durable=True, auto_delete=False)


def reply_queue(name: str | None = None) -> Queue:
    """A client's reply queue (RabbitMQ: exclusive, gone with the client's connection)."""
    name = name or f"{REPLY_QUEUE_PREFIX}{uuid.uuid4().hex}"
    return Queue(name, routing_key=name, durable=False, exclusive=True, auto_delete=True)


class Publisher:
    """Publishes replies (or commands) to a queue by name, on a connection of its own; safe to
    call from any thread."""

    def __init__(self, broker_url: str, transport_options: dict[str, Any] | None = None) -> None:
        self._connection = Connection(broker_url, transport_options=transport_options or {})
        self._producer: Producer | None = None
        self._lock = threading.Lock()

    def publish(self, body: dict[str, Any], queue_name: str) -> None:
        with self._lock:
            if self._producer is None:
                self._producer = Producer(self._connection.channel())
            publish = self._connection.ensure(self._producer, self._producer.publish, max_retries=3)
            publish(body, exchange="", routing_key=queue_name, serializer="json", delivery_mode=2)

    def close(self) -> None:
        with self._lock:
            self._connection.release()
            self._producer = None


class CommandConsumer:
    """One consumer over every session queue this process holds, on a daemon thread with its own
    broker connection. Every kombu call happens on that thread: other threads ask for queues to be
    added or removed and for messages to be acked through its to-do list."""

    def __init__(self, broker_url: str, on_message: OnMessage, transport_options: dict[str, Any] | None = None) -> None:
        self.broker_url = broker_url
        self.transport_options = transport_options or {}
        self.on_message = on_message
        self._todo: queue.SimpleQueue[tuple[str, Any, threading.Event | None]] = queue.SimpleQueue()
        self._queues: dict[str, Queue] = {}
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> CommandConsumer:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="browserq-session-commands", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def add(self, name: str, timeout_s: float = 10.0) -> None:
        """Consume ``name`` (declared first); returns once it is consumed."""
        self._ask("add", name, timeout_s)

    def remove(self, name: str, *, delete: bool, timeout_s: float = 10.0) -> None:
        """Stop consuming ``name``; ``delete``: the session ended, its queue goes too."""
        self._ask("delete" if delete else "remove", name, timeout_s)

    def _ask(self, what: str, name: str, timeout_s: float) -> None:
        done = threading.Event()
        self._todo.put((what, name, done))
        if not done.wait(timeout_s):
            raise TimeoutError(f"the session command consumer did not {what} queue {name} within {timeout_s} s")

    # --- the consumer thread -------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                with Connection(self.broker_url, transport_options=self.transport_options) as connection:
                    self._consume(connection)
            except Exception as exc:  # the broker went away: connect again, consume the same queues
                log.warning("session command consumer lost its broker connection", error=str(exc)[:300])
                self._stopping.wait(RECONNECT_PAUSE_S)

    def _consume(self, connection: Connection) -> None:
        channel = connection.channel()
        consumer = Consumer(channel, queues=[], callbacks=[self._received], accept=["json"], no_ack=False)
        for known in self._queues.values():
            self._start_queue(consumer, channel, known)
        while not self._stopping.is_set():
            self._do_todo(consumer, channel)
            if not consumer.queues:
                time.sleep(CONSUMER_TICK_S)
                continue
            try:
                connection.drain_events(timeout=CONSUMER_TICK_S)
            except TimeoutError:
                pass
        consumer.cancel()

    def _do_todo(self, consumer: Consumer, channel: Any) -> None:
        while True:
            try:
                what, item, done = self._todo.get_nowait()
            except queue.Empty:
                return
            try:
                if what == "ack":
                    item.ack()
                elif what == "add":
                    self._queues[item] = command_queue(item)
                    self._start_queue(consumer, channel, self._queues[item])
                else:
                    self._queues.pop(item, None)
                    consumer.cancel_by_queue(item)
                    if what == "delete":
                        command_queue(item)(channel).delete()
            except Exception as exc:
                log.warning("session command consumer could not carry out a request", what=what,
                            error=str(exc)[:300])
            finally:
                if done is not None:
                    done.set()

    @staticmethod
    def _start_queue(consumer: Consumer, channel: Any, bound: Queue) -> None:
        bound(channel).declare()
        if consumer.consuming_from(bound):
            return
        consumer.add_queue(bound)
        consumer.consume()

    def _received(self, body: Any, message: Message) -> None:
        if not isinstance(body, dict):
            log.warning("session command that is not a mapping dropped")
            message.ack()
            return

        def done() -> None:
            self._todo.put(("ack", message, None))

        self.on_message(body, done)


__all__ = [
    "COMMAND_QUEUE_PREFIX", "REPLY_MARGIN_S", "REPLY_QUEUE_PREFIX", "START_WINDOW_S", "CommandConsumer", "Publisher",
    "clock_offset_s", "command_queue", "command_queue_name", "reply_queue", "start_by", "too_late",
]
