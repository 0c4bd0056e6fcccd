"""The Redis connection the limiters share: a sync client and one asyncio client per event loop.

Every command is retried once after a short pause when the connection fails (a Redis restart
takes a moment); a second failure becomes :class:`LimitsUnavailable`, naming the URL to check.
Lua scripts are sent by SHA and re-loaded automatically after a restart (``NOSCRIPT``).
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import redis
import redis.asyncio as aredis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from browserq.limit_specs import DEFAULT_REDIS_URL
from browserq.limits.errors import LimitsUnavailable
from browserq.redact import redact_url

if TYPE_CHECKING:  # pragma: no cover
    from browserq.settings import Settings

T = TypeVar("T")

DEFAULT_LIMITS_REDIS_URL = DEFAULT_REDIS_URL

#: Errors worth one retry: the server restarted, the connection dropped or timed out.
TRANSIENT = (redis.ConnectionError, redis.TimeoutError, ConnectionError, TimeoutError, OSError)


def limits_redis_url(settings: Settings) -> str:
    """``BROWSERQ_LIMITS_REDIS_URL``, else the broker if it is Redis, else the local default."""
    return settings.shared_redis_url(settings.limits_redis_url)


class RedisHandle:
    """Lazily connected clients for one URL, safe to share between limiters in one process.

    redis-py's asyncio connections belong to the loop that opened them, so the async client is
    kept per loop (a worker has one long-lived loop; tests use many short ones). After a fork the
    sync pool reconnects by itself (redis-py checks the pid).
    """

    def __init__(
        self,
        url: str,
        *,
        retries: int = 1,
        retry_delay_s: float = 0.5,
        socket_timeout_s: float = 5.0,
    ) -> None:
        self.url = url
        self.retries = retries
        self.retry_delay_s = retry_delay_s
        self._kwargs: dict[str, Any] = {
            "socket_timeout": socket_timeout_s,
            "socket_connect_timeout": socket_timeout_s,
            "health_check_interval": 30,
        }
        self._lock = threading.Lock()
        self._sync: redis.Redis | None = None
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aredis.Redis] = (
            weakref.WeakKeyDictionary()
        )

    # --- clients ---------------------------------------------------------------------------
    @property
    def sync(self) -> redis.Redis:
        with self._lock:
            if self._sync is None:
                # retries are ours (below), so redis-py's own are off
                self._sync = redis.Redis.from_url(
                    self.url, retry=Retry(NoBackoff(), 0), **self._kwargs
                )
            return self._sync

    def aio(self) -> aredis.Redis:
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._async.get(loop)
            if client is None:
                client = aredis.Redis.from_url(
                    self.url, retry=AsyncRetry(NoBackoff(), 0), **self._kwargs
                )
                self._async[loop] = client
            return client

    # --- calls with one retry ----------------------------------------------------------------
    def _unavailable(self, exc: BaseException) -> LimitsUnavailable:
        return LimitsUnavailable(
            f"the limits Redis at {redact_url(self.url)} is unreachable ({type(exc).__name__}: {exc}); "
            "is Redis running? (set BROWSERQ_LIMITS_REDIS_URL to point elsewhere)"
        )

    def call(self, fn: Callable[[redis.Redis], T]) -> T:
        for attempt in range(self.retries + 1):
            try:
                return fn(self.sync)
            except TRANSIENT as exc:
                if attempt >= self.retries:
                    raise self._unavailable(exc) from exc
                time.sleep(self.retry_delay_s)
        raise AssertionError("unreachable")  # pragma: no cover

    async def acall(self, fn: Callable[[aredis.Redis], Awaitable[T]]) -> T:
        for attempt in range(self.retries + 1):
            try:
                return await fn(self.aio())
            except TRANSIENT as exc:
                if attempt >= self.retries:
                    raise self._unavailable(exc) from exc
                await asyncio.sleep(self.retry_delay_s)
        raise AssertionError("unreachable")  # pragma: no cover

    # --- lifecycle ----------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close this loop's async client (call from the loop that used it)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._async.pop(loop, None)
        if client is not None:
            await client.aclose()

    def close(self) -> None:
        with self._lock:
            client, self._sync = self._sync, None
        if client is not None:
            client.close()


class Script:
    """A Lua script runnable on both clients (EVALSHA, re-loaded after NOSCRIPT)."""

    def __init__(self, source: str) -> None:
        self.source = source

    def run(self, handle: RedisHandle, keys: list[str], args: list[Any]) -> Any:
        def go(client: redis.Redis) -> Any:
            return client.register_script(self.source)(keys=keys, args=args)

        return handle.call(go)

    async def arun(self, handle: RedisHandle, keys: list[str], args: list[Any]) -> Any:
        async def go(client: aredis.Redis) -> Any:
            return await client.register_script(self.source)(keys=keys, args=args)

        return await handle.acall(go)
