"""Documents that are not pages, bounded while their bytes arrive, under the ``patchright`` driver.

patchright runs a context's init scripts (stealth's patches, ``egress.js``) by putting them into
the HTML of every document: it holds each document's response at its headers and reads the
*whole* body (``Fetch.getResponseBody``) before Chromium may go on — HTML or not. A link to a
192 MiB attachment is then read into memory whole before Chromium turns it into a download, and
an endless one is read forever: the run's :class:`~browserq.actions.download_watch.DownloadWatch`
never hears of either, and the step waits out its timeout.

So under patchright a browser-level ``Fetch`` session (paused before the driver's page-level one,
which is why it is browser-level) holds the response of every document of a watched context, and
takes the ones patchright has no HTML to inject into — an attachment, or anything not
``text/html`` — itself: it reads the body as a stream, at most ``BROWSERQ_MAX_DOWNLOAD_BYTES``,
then hands Chromium the bytes (which then becomes a download as usual, measured by the watch) or,
past the limit, cancels the request and tells the context's watch (``DOWNLOAD_TOO_LARGE``).
HTML pages go on untouched. The other drivers stream downloads to disk themselves; this is off.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

if TYPE_CHECKING:  # pragma: no cover
    from playwright.async_api import Browser, BrowserContext, CDPSession, Page

log = structlog.get_logger(__name__)

#: Which drivers read documents whole before Chromium sees them.
WHOLE_BODY_DRIVERS = frozenset({"patchright"})
_PATTERNS = [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Response"}]
#: Bytes asked of Chromium per ``IO.read``.
READ_CHUNK = 1024 * 1024

#: ``refused(url, bytes)``: the document at ``url`` was stopped past the limit after ``bytes``.
Refused = Callable[[str, int], None]


@dataclass
class _Watched:
    limit: int
    refused: Refused


def takes_over(headers: list[dict[str, str]]) -> bool:
    """Is this document response one patchright has no HTML to inject into (so reads for nothing)?"""
    fields = {h["name"].lower(): h["value"] for h in headers}
    if fields.get("content-disposition", "").strip().lower().startswith("attachment"):
        return True
    return "text/html" not in fields.get("content-type", "text/html").lower()


def declared_length(headers: list[dict[str, str]]) -> int:
    for header in headers:
        if header["name"].lower() == "content-length":
            with contextlib.suppress(ValueError):
                return int(header["value"])
    return 0


class DocumentBodyBound:
    """The bound of one launched Chromium: its contexts' non-HTML documents, read at most to a limit."""

    def __init__(self, browser: Browser) -> None:
        self._browser = browser
        self._session: CDPSession | None = None
        self._enabled = False
        self._lock = asyncio.Lock()
        self._watched: dict[str, _Watched] = {}  # browserContextId -> its limit and its watch
        self._tasks: set[asyncio.Task[None]] = set()

    async def watch(self, context: BrowserContext, page: Page, limit: int, refused: Refused) -> None:
        """Bound ``context``'s documents (``page``: one of its pages) until it closes."""
        session = await context.new_cdp_session(page)
        try:
            info = await session.send("Target.getTargetInfo")
        finally:
            with contextlib.suppress(Exception):
                await session.detach()
        context_id = str(info["targetInfo"]["browserContextId"])
        async with self._lock:
            self._watched[context_id] = _Watched(limit, refused)
            await self._update()
        context.on("close", lambda _: self._spawn(self._release(context_id)))

    async def _release(self, context_id: str) -> None:
        async with self._lock:
            self._watched.pop(context_id, None)
            with contextlib.suppress(Exception):  # the browser is going away
                await self._update()

    async def _update(self) -> None:
        wanted = bool(self._watched)
        if wanted == self._enabled:
            return
        if self._session is None:
            self._session = await self._browser.new_browser_cdp_session()
            self._session.on("Fetch.requestPaused", lambda event: self._spawn(self._paused(event)))
        await self._session.send("Fetch.enable" if wanted else "Fetch.disable", {"patterns": _PATTERNS} if wanted else None)
        self._enabled = wanted

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _paused(self, event: dict[str, Any]) -> None:
        session = self._session
        assert session is not None
        request_id = event["requestId"]
        headers = event.get("responseHeaders") or []
        status = int(event.get("responseStatusCode") or 0)
        try:
            watched = await self._owner(event.get("frameId")) if takes_over(headers) else None
            if watched is None or not 200 <= status < 300:
                await session.send("Fetch.continueRequest", {"requestId": request_id})
                return
            await self._read_bounded(session, event, watched)
        except Exception as exc:  # the target went away meanwhile
            log.debug("paused document already gone", error=str(exc))

    async def _owner(self, frame_id: str | None) -> _Watched | None:
        """The watched context of a frame: pages and popups are targets; else the only one watched."""
        assert self._session is not None
        if frame_id:
            with contextlib.suppress(Exception):
                info = await self._session.send("Target.getTargetInfo", {"targetId": frame_id})
                return self._watched.get(str(info["targetInfo"].get("browserContextId")))
        # A frame inside a page: with one watched context it is that one's (bounded either way).
        return next(iter(self._watched.values())) if len(self._watched) == 1 else None

    async def _read_bounded(self, session: CDPSession, event: dict[str, Any], watched: _Watched) -> None:
        """Read the body, at most ``watched.limit`` bytes; then hand it to Chromium, or refuse it."""
        request_id, url = event["requestId"], event["request"]["url"]
        headers = event.get("responseHeaders") or []
        declared = declared_length(headers)
        if declared > watched.limit:
            await session.send("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"})
            watched.refused(url, declared)
            return
        stream = (await session.send("Fetch.takeResponseBodyAsStream", {"requestId": request_id}))["stream"]
        body = bytearray()
        try:
            while True:
                chunk = await session.send("IO.read", {"handle": stream, "size": READ_CHUNK})
                data = chunk.get("data", "")
                body += base64.b64decode(data) if chunk.get("base64Encoded") else data.encode()
                if len(body) > watched.limit:
                    await session.send("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"})
                    log.info("document stopped at the download limit", url=url[:200], bytes=len(body))
                    watched.refused(url, len(body))
                    return
                if chunk.get("eof"):
                    break
        finally:
            with contextlib.suppress(Exception):
                await session.send("IO.close", {"handle": stream})
        await session.send("Fetch.fulfillRequest", {
            "requestId": request_id, "responseCode": event["responseStatusCode"], "responseHeaders": headers,
            "body": base64.b64encode(bytes(body)).decode(),
        })


_BOUNDS: weakref.WeakKeyDictionary[Browser, DocumentBodyBound] = weakref.WeakKeyDictionary()


def bound_of(browser: Browser) -> DocumentBodyBound:
    """The bound of ``browser``, made on first use."""
    bound = _BOUNDS.get(browser)
    if bound is None:
        bound = _BOUNDS[browser] = DocumentBodyBound(browser)
    return bound


__all__ = ["WHOLE_BODY_DRIVERS", "DocumentBodyBound", "bound_of", "declared_length", "takes_over"]
