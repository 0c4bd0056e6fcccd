"""What a page did, kept in small ring buffers so a failure snapshot can show the last moments."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from playwright.async_api import BrowserContext, CDPSession, ConsoleMessage, Request, Response

from browserq.browsers import api

#: Drivers that deliver ``console`` and ``weberror`` events (the patched forks keep CDP's Runtime
#: domain off, so they cannot: :func:`replay_console` reads the page's stored messages instead).
LIVE_CONSOLE = api.NAME == "playwright"


class PageActivity:
    """Console messages, page errors and network responses of one context (bounded)."""

    def __init__(self, context: BrowserContext, *, console_lines: int, network_entries: int) -> None:
        self.console: deque[dict[str, Any]] = deque(maxlen=max(console_lines, 1))
        self.network: deque[dict[str, Any]] = deque(maxlen=max(network_entries, 1))
        context.on("console", self._on_console)
        context.on("weberror", self._on_page_error)
        context.on("response", self._on_response)
        context.on("requestfailed", self._on_request_failed)

    def _on_console(self, message: ConsoleMessage) -> None:
        self.console.append({"t": time.time(), "type": message.type, "text": message.text[:2000]})

    def _on_page_error(self, web_error: Any) -> None:
        error = web_error.error
        self.console.append({"t": time.time(), "type": "pageerror", "text": str(error)[:2000]})

    def _on_response(self, response: Response) -> None:
        request = response.request
        self.network.append(
            {
                "t": time.time(),
                "method": request.method,
                "url": response.url[:2000],
                "status": response.status,
                "resource_type": request.resource_type,
            }
        )

    def _on_request_failed(self, request: Request) -> None:
        self.network.append(
            {
                "t": time.time(),
                "method": request.method,
                "url": request.url[:2000],
                "status": None,
                "failure": request.failure,
                "resource_type": request.resource_type,
            }
        )


async def replay_console(session: CDPSession, limit: int) -> list[dict[str, Any]]:
    """The console messages and uncaught errors the page has stored, read after the fact.

    Chromium keeps a page's console messages and exceptions, and sends them all when a client
    enables the ``Runtime`` domain. Enabling it is a tell a page can notice, which is why the
    patched drivers never do: browserq does it once, on a failed run's page, for the snapshot
    (the run already failed), then disables it again.
    """
    lines: list[dict[str, Any]] = []

    def on_console(event: dict[str, Any]) -> None:
        text = " ".join(str(a.get("value", a.get("description", a.get("type", "")))) for a in event.get("args", []))
        lines.append({"t": event.get("timestamp", 0) / 1000, "type": event.get("type", "log"), "text": text[:2000]})

    def on_exception(event: dict[str, Any]) -> None:
        details = event.get("exceptionDetails", {})
        text = details.get("exception", {}).get("description") or details.get("text", "")
        lines.append({"t": event.get("timestamp", 0) / 1000, "type": "pageerror", "text": str(text)[:2000]})

    session.on("Runtime.consoleAPICalled", on_console)
    session.on("Runtime.exceptionThrown", on_exception)
    await asyncio.wait_for(session.send("Runtime.enable"), 2.0)
    await asyncio.wait_for(session.send("Runtime.disable"), 2.0)  # replayed before this answers
    return sorted(lines, key=lambda line: line["t"])[-max(limit, 1):]
