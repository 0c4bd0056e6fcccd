"""A live context driven one command at a time, as a session will: the runner's parts open it
(:class:`ContextLease`), :class:`StepAttempt` runs each command (recorded like a template's steps),
and the session's :class:`RefBook` and :class:`Snapshotter` issue and resolve refs.

The queue, the worker and the session lease are not built yet; this harness is what they will
drive. Pages are served by the tests on 127.0.0.1.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from browserq.execute.runtime import Runtime
from browserq.redact import Redactor
from browserq.runner import RunRequest, StepResult
from browserq.runner.state import RunState
from browserq.sessions import RefBook, Snapshot, Snapshotter, command_step
from tests.conftest import template
from tests.support.http import serve_http


class LiveSession:
    """One open context and the refs of its snapshots; every call runs on the runtime's loop."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        loaded = template("""
            settings: {trace: off, step_timeout_s: 5, step_retries: 0}
            steps:
              - {action: get, what: url, into: here}
        """)
        run_id = runtime.submit_loaded(loaded).run_id
        self.state: RunState = runtime.runner.new_state(
            RunRequest(run_id=run_id, run_attempt=1, loaded=loaded, params={}), Redactor()
        )
        self.book = RefBook()
        self.snapshots = Snapshotter(self.book)
        self.commands = 0
        self.run(runtime.runner.context.open(self.state))
        self.book.watch(self.page)  # the session's page from its start: every navigation counts
        self.state.browser.refs = self.book

    def run(self, coro: Any, timeout: float = 60) -> Any:
        return self.runtime.loop.run(coro, timeout=timeout)

    @property
    def page(self) -> Any:
        return self.state.browser.page

    def do(self, action: str, **fields: Any) -> StepResult:
        """One command through StepAttempt (the executor template steps use)."""
        step = command_step(action, **fields)
        self.commands += 1
        return self.run(self.runtime.runner.attempt.run(step, str(self.commands), self.state))

    def snapshot(self, **options: Any) -> Snapshot:
        return self.run(self.snapshots.take(self.page, **options))

    def evaluate(self, expression: str) -> Any:
        return self.run(self.page.evaluate(expression))

    def close(self) -> None:
        async def closing() -> None:
            try:
                await self.runtime.runner.context.close(self.state)
            finally:
                await self.state.journal.flush()

        self.run(closing())


@pytest.fixture
def session(sqlite_runtime: Runtime) -> Iterator[LiveSession]:
    live = LiveSession(sqlite_runtime)
    try:
        yield live
    finally:
        live.close()


class PressCounter:
    """Counts ``POST /press/<name>`` per name: which button a click really reached."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def add(self, name: str) -> None:
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + 1

    def __getitem__(self, name: str) -> int:
        with self._lock:
            return self._counts.get(name, 0)


def pages_with_presses(pages: dict[str, str], presses: PressCounter) -> type[BaseHTTPRequestHandler]:
    """Serves ``pages`` (GET) and counts ``POST /press/<name>``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path.split("?")[0])
            self._answer(200 if body else 404, body or "not found")

        def do_POST(self) -> None:
            if self.path.startswith("/press/"):
                presses.add(self.path.removeprefix("/press/"))
                return self._answer(200, "ok")
            return self._answer(404, "not found")

        def _answer(self, status: int, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: object) -> None:
            return None

    return Handler


@pytest.fixture
def presses() -> PressCounter:
    return PressCounter()


@pytest.fixture
def served(presses: PressCounter) -> Iterator[Any]:
    """``served(pages)`` → the base URL of a server for ``pages`` that counts presses."""
    stack: list[Any] = []

    def serve(pages: dict[str, str]) -> str:
        manager = serve_http(pages_with_presses(pages, presses))
        stack.append(manager)
        return "http://" + manager.__enter__()

    yield serve
    for manager in reversed(stack):
        manager.__exit__(None, None, None)
