"""What a page did, kept in small ring buffers so a failure snapshot can show the last moments."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from playwright.async_api import BrowserContext, ConsoleMessage, Request, Response


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
