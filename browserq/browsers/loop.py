"""A private asyncio loop on its own thread.

Playwright objects belong to the loop that created them. Celery's prefork children run tasks on
their main thread, and Playwright's sync API breaks ``asyncio.run`` on the thread it runs on, so
each process keeps one long-lived loop thread that owns the async Playwright driver; synchronous
callers hand it coroutines and wait for the result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: How long an interrupted caller waits for the cancelled coroutine's cleanup.
CLEANUP_WAIT_S = 20.0

#: The longest a blocked caller goes without running Python's signal handlers. The kernel may hand
#: a process's SIGINT/SIGTERM (or Celery's soft-limit SIGUSR1) to any of its threads; Python runs
#: the handler only on the main thread, and only once that thread runs again — so a main thread
#: blocked on the loop for a whole run would hear Ctrl-C only when the run ended.
SIGNAL_CHECK_S = 0.5


def result_awake(future: concurrent.futures.Future[T], timeout: float | None = None) -> T:
    """``future.result(timeout)``, waking every :data:`SIGNAL_CHECK_S` so that a signal delivered
    to another thread is handled within that (a handler that raises interrupts the wait)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not future.done():
        left = SIGNAL_CHECK_S if deadline is None else min(SIGNAL_CHECK_S, deadline - time.monotonic())
        if left <= 0:
            break
        concurrent.futures.wait([future], timeout=left)
    return future.result(timeout=0)  # its value, its exception, or TimeoutError as before


def sleep_awake(seconds: float) -> None:
    """``time.sleep(seconds)`` that runs signal handlers at least every :data:`SIGNAL_CHECK_S`."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, SIGNAL_CHECK_S))


class EventLoopThread:
    def __init__(self, name: str = "browserq-loop") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("event loop thread is not running; call start() first")
        return self._loop

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> EventLoopThread:
        if self.running:
            return self
        self._ready.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        self._ready.wait()
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop and return a thread-safe future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and block until it finishes.

        If the caller is interrupted (Celery's soft time limit raises inside ``result()``), the
        coroutine is cancelled and this waits for its cleanup (recording the run, closing its
        context) before the exception propagates, so the next task starts on a clean slate.
        """
        finished = threading.Event()
        holder: dict[str, asyncio.Task[Any]] = {}

        async def tracked() -> T:
            task = asyncio.current_task()
            assert task is not None
            holder["task"] = task
            try:
                return await coro
            finally:
                finished.set()

        future = self.submit(tracked())
        try:
            return result_awake(future, timeout)
        except BaseException:
            if not future.done():
                task = holder.get("task")
                if task is not None:
                    self.loop.call_soon_threadsafe(task.cancel)
                else:
                    future.cancel()
                finished.wait(CLEANUP_WAIT_S)
            raise

    def stop(self, timeout: float = 10) -> None:
        if not self.running or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        assert self._thread is not None
        self._thread.join(timeout)
        self._thread = None
        self._loop = None
