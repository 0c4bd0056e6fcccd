"""The fleet-wide beat lock: of all running beats, only the one holding it fires anything.

A Redis lock (redis-py ``Lock``: ``SET NX PX`` with a token of this process) that expires after
``BROWSERQ_BEAT_LOCK_TTL_S`` unless renewed. The scheduler renews it on every tick (every third of
the TTL at least), so the lock lives exactly as long as the beat's loop does: a beat that dies,
hangs or loses Redis stops renewing, and a standby beat takes it within a TTL plus one of its
polls. A beat that stops cleanly releases it at once. Redis that cannot be reached counts as
"not holding": a beat that cannot prove it holds the lock fires nothing (the slots it misses are
caught up by whichever beat holds the lock next, within the catch-up window).

It lives in the fleet's Redis: ``BROWSERQ_LIMITS_REDIS_URL`` if set, else the broker when it is
Redis, else redis://127.0.0.1:6379/0 (:meth:`Settings.shared_redis_url`); with a RabbitMQ
broker, point ``BROWSERQ_LIMITS_REDIS_URL`` at the Redis every beat can reach.
"""

from __future__ import annotations

import enum
import os
import socket
import uuid
from typing import cast

import redis
import structlog
from redis.exceptions import LockError

from browserq.redact import redact_url
from browserq.settings import Settings

log = structlog.get_logger(__name__)


def beat_lock_url(settings: Settings) -> str:
    """The Redis the lock lives in (also what ``browserq doctor`` checks)."""
    return settings.shared_redis_url(settings.limits_redis_url)


class Hold(enum.Enum):
    """What one :meth:`BeatLock.hold` found."""

    ACQUIRED = "acquired"  # just taken (at start, or taking over): slots may have been missed
    HELD = "held"  # still ours, renewed
    STANDBY = "standby"  # another beat holds it, or Redis cannot be reached


class BeatLock:
    """One beat process's side of the lock."""

    def __init__(self, url: str, key: str, ttl_s: float) -> None:
        self.url, self.key, self.ttl_s = url, key, ttl_s
        self.client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._lock = self.client.lock(key, timeout=ttl_s, blocking=False, thread_local=False)
        self.holding = False
        self._reported: str | None = None  # the last standby reason logged (log changes only)

    @classmethod
    def from_settings(cls, settings: Settings) -> BeatLock:
        return cls(beat_lock_url(settings), f"browserq:beat-lock:{settings.queue}", settings.beat_lock_ttl_s)

    @property
    def poll_interval_s(self) -> float:
        """How often a holder renews and a standby tries to take over."""
        return self.ttl_s / 3

    def hold(self) -> Hold:
        """Renew the lock if this beat holds it, else try to take it."""
        try:
            if self.holding:
                try:
                    self._lock.reacquire()
                    return Hold.HELD
                except LockError:  # not ours any more: this beat stalled longer than the TTL
                    self.holding = False
                    log.warning("beat lock lost (a tick took longer than BROWSERQ_BEAT_LOCK_TTL_S); "
                                "standing by", key=self.key, ttl_s=self.ttl_s)
            if self._lock.acquire(blocking=False, token=self.token) or self._ours():
                self.holding, self._reported = True, None
                log.info("beat lock taken: this beat fires the schedules", key=self.key, token=self.token)
                return Hold.ACQUIRED
            self._standby(f"the beat lock is held by {self._holder()}")
        except redis.RedisError as exc:
            self.holding = False
            self._standby(f"Redis at {redact_url(self.url)} is unreachable ({type(exc).__name__}: {exc})",
                          "error")
        return Hold.STANDBY

    def release(self) -> None:
        """Give the lock up (a clean stop): a standby takes over at its next poll."""
        if not self.holding:
            return
        self.holding = False
        try:
            self._lock.release()
            log.info("beat lock released", key=self.key)
        except (LockError, redis.RedisError):
            pass  # expired or unreachable: it frees itself after the TTL

    def _ours(self) -> bool:
        """The key holds this process's token (a Redis error hid a renewal that succeeded)."""
        if self.client.get(self.key) != self.token.encode():
            return False
        self._lock.reacquire()
        return True

    def _holder(self) -> str:
        holder = cast("bytes | None", self.client.get(self.key))  # a client that does not decode
        return holder.decode(errors="replace") if holder else "nobody (it just expired)"

    def _standby(self, reason: str, level: str = "info") -> None:
        if reason != self._reported:  # once per change, not once per poll
            self._reported = reason
            getattr(log, level)(f"beat on standby: {reason}", key=self.key)


__all__ = ["BeatLock", "Hold"]
