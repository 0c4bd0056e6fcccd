"""``allowed_domains`` enforced inside the browser: a foreign request is stopped before it is sent.

Checking a URL before ``navigate`` and the landing page after a step is detection: a 302, a
``location =``, a clicked link, an iframe or a popup has already reached the foreign server by then.
Here the browser itself holds every *document* request until Python has judged its host with
:func:`browserq.guards.url_host_allowed` (the same rule the template loader and ``navigate`` use):

* **documents** — one browser-level CDP session per launched Chromium enables ``Fetch`` with
  ``patterns=[{resourceType: "Document", requestStage: "Request"}]``. Chromium filters by resource
  type itself, so images, scripts, XHR and the rest never come to Python; documents do, from every
  target of every context: top-level navigations, **each redirect hop** (Playwright's own
  ``route()`` is never called for redirects), iframes in and out of process, popups
  (``window.open``, ``target=_blank``) before their first request. A page-level session would miss
  popups (they exist before Playwright reports them) and Playwright routes miss redirect hops: both
  were tried, see ``tests/browsers/test_domains.py``.
* **which run's rule** — a paused request names its frame. When every guarded context allows the
  host, it continues at once (the common case: no lookup). Otherwise the frame is attributed: a
  page, popup or out-of-process iframe is a target (``Target.getTargetInfo`` gives its browser
  context); a frame inside a page is looked up in its pages' frame trees. A frame that cannot be
  attributed is blocked if any guarded context forbids the host (fail closed).
* **strict mode** (``settings.network: strict``) — subresources, ``fetch``/XHR, beacons and
  WebSockets to other hosts are stopped too. While a strict context is open the same session
  pauses requests of every type (``urlPattern: "*"``), so redirect hops of images or fetches are
  judged as well; a Playwright ``context.route()`` would not be called for them. This does bring
  every request of the browser to Python while a strict run is open — its measured price
  (``bench/domain_guard.py``). WebSockets are not seen by ``Fetch``:
  ``context.route_web_socket()`` with a regex matching only foreign hosts refuses those (the
  driver matches the pattern, so WebSockets to allowed hosts never reach Python).

* **document responses** — a ``Speculation-Rules`` header names prefetches that would go
  through an isolated network context no ``Fetch`` session sees. With network prediction off
  (below) Chromium preloads nothing, so responses are not paused; where the pref could not be
  set (an embedder without the settings page) they are, and the header is stripped in guarded
  frames (the status sent with the new headers: Chromium refuses headers alone). What else
  ``Fetch`` never sees (inline speculation rules, WebRTC, WebTransport, workers' WebSockets) is
  stopped page-side by :mod:`browserq.browsers.egress`.

* **no preconnect** — before its first pause, the guard turns the browser's network prediction
  off (:mod:`browserq.browsers.prediction`): Chromium would otherwise open a TCP connection to a
  document's host before the request exists, so before ``Fetch`` could pause it.

``Fetch`` is enabled only while a guarded context is open, so runs without ``allowed_domains``
pay nothing. Every path and how it is stopped: ``docs/security.md``.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from browserq.browsers.egress import confine_page_apis
from browserq.browsers.prediction import turn_off_network_prediction
from browserq.guards import foreign_url_regex, url_host_allowed, url_scheme_and_host

if TYPE_CHECKING:  # pragma: no cover
    from playwright.async_api import Browser, BrowserContext, CDPSession, Page, WebSocketRoute

log = structlog.get_logger(__name__)

#: Documents' responses, paused for their ``Speculation-Rules`` header (see :meth:`DomainGuard._respond`)
#: only where network prediction could not be turned off: with it off Chromium preloads nothing.
DOCUMENT_RESPONSES: list[dict[str, str]] = [
    {"urlPattern": "*", "resourceType": "Document", "requestStage": "Response"}
]
#: The ``Fetch.enable`` patterns: only documents, paused before they are sent.
DOCUMENT_PATTERNS: list[dict[str, str]] = [
    {"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}
]
#: While a strict context is open: every request.
ALL_PATTERNS: list[dict[str, str]] = [{"urlPattern": "*", "requestStage": "Request"}]
#: A response header naming speculation rules: its prefetches would bypass Fetch (egress.py).
_SPECULATION_HEADER = "speculation-rules"
#: Blocked subresource URLs kept as a sample per run (the count is complete).
SAMPLE_SIZE = 20
NETWORK_MODES = ("open", "strict")
_NETWORK_SCHEMES = ("http", "https", "ws", "wss")


@dataclass
class BlockLog:
    """What the guard stopped in one context: every blocked document, subresources counted."""

    allowed_domains: tuple[str, ...]
    strict: bool = False
    documents: list[str] = field(default_factory=list)
    subresources: Counter[str] = field(default_factory=Counter)  # by resource type
    sample: list[str] = field(default_factory=list)
    reported: int = 0  # documents already turned into a failed step

    def document(self, url: str) -> None:
        self.documents.append(url)

    def subresource(self, kind: str, url: str) -> None:
        self.subresources[kind] += 1
        if len(self.sample) < SAMPLE_SIZE:
            self.sample.append(url)

    def take_unreported(self) -> list[str]:
        """Blocked documents not yet reported (each is reported once)."""
        new = self.documents[self.reported :]
        self.reported = len(self.documents)
        return new

    @property
    def empty(self) -> bool:
        return not self.documents and not self.subresources

    def as_dict(self) -> dict[str, Any]:
        return {
            "allowed_domains": list(self.allowed_domains),
            "network": "strict" if self.strict else "open",
            "documents_blocked": list(self.documents),
            "subresources_blocked": sum(self.subresources.values()),
            "subresources_by_type": dict(self.subresources),
            "subresource_sample": list(self.sample),
        }


@dataclass
class _Guarded:
    context: BrowserContext
    log: BlockLog


class DomainGuard:
    """The document guard of one launched Chromium (one browser-level CDP session)."""

    def __init__(self, browser: Browser, *, has_settings_page: bool = True) -> None:
        self._browser = browser
        self._has_settings_page = has_settings_page  # False: the headless shell (engines.py)
        self._session: CDPSession | None = None
        self._patterns: list[dict[str, str]] | None = None  # what Fetch is enabled with (None: off)
        self._prediction_off = False  # network prediction is off: no response needs a pause
        self._lock = asyncio.Lock()
        self._guarded: dict[str, _Guarded] = {}  # browserContextId -> what it allows
        self._context_ids: weakref.WeakKeyDictionary[BrowserContext, str] = weakref.WeakKeyDictionary()
        self._frame_owner: dict[str, str] = {}  # frameId -> browserContextId
        self._prepared: weakref.WeakKeyDictionary[BrowserContext, str] = weakref.WeakKeyDictionary()
        # Not weak: a session holds its context, which holds the page. Forgotten at context close.
        self._page_sessions: dict[Page, CDPSession] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # --- registration ------------------------------------------------------------------------
    async def protect(
        self, context: BrowserContext, page: Page, allowed_domains: Sequence[str], *, strict: bool = False
    ) -> BlockLog:
        """Guard ``context`` (``page`` is one of its pages, not navigated yet) by ``allowed_domains``.

        Returns the live :class:`BlockLog`. An empty ``allowed_domains`` guards nothing.
        """
        block_log = BlockLog(tuple(allowed_domains), strict=strict and bool(allowed_domains))
        if not allowed_domains:
            return block_log
        context_id = self._prepared.pop(context, None) or await self._context_id(page)
        async with self._lock:
            self._guarded[context_id] = _Guarded(context, block_log)
            self._context_ids[context] = context_id
            await self._update_patterns()
        # The page-side half: what Fetch never sees (speculation rules; WebRTC & co. when strict).
        await confine_page_apis(context, context_id, block_log.allowed_domains, strict=block_log.strict)
        if block_log.strict:
            await _install_websocket_guard(context, block_log)
        return block_log

    async def prepare(self, context: BrowserContext, page: Page) -> None:
        """Look up ``context``'s id ahead of time (for pre-warmed spares, off a run's path)."""
        self._prepared[context] = await self._context_id(page)

    async def release(self, context: BrowserContext) -> None:
        """Forget ``context`` (closed or closing); ``Fetch`` is disabled when none is guarded."""
        self._forget(context)
        async with self._lock:
            context_id = self._context_ids.pop(context, None)
            if context_id is None:
                return
            self._guarded.pop(context_id, None)
            if self._guarded:
                self._frame_owner = {f: o for f, o in self._frame_owner.items() if o != context_id}
            else:
                self._frame_owner.clear()
        # Switching Fetch off (or back to documents only) is not the closing run's business.
        self._background(self._update_patterns_locked())

    def _forget(self, context: BrowserContext) -> None:
        """Drop the page sessions of ``context``: any context, a run's or a spare never handed out."""
        self._prepared.pop(context, None)
        for page in [p for p in self._page_sessions if p.context is context]:
            del self._page_sessions[page]

    async def _update_patterns_locked(self) -> None:
        async with self._lock:
            try:
                await self._update_patterns()
            except Exception as exc:  # the browser is going away
                log.debug("Fetch patterns not updated", error=str(exc))

    def _background(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def guarded_contexts(self) -> int:
        return len(self._guarded)

    async def _context_id(self, page: Page) -> str:
        session = await self._page_session(page)
        info = await session.send("Target.getTargetInfo")
        return str(info["targetInfo"]["browserContextId"])

    async def _update_patterns(self) -> None:
        """Documents while any context is guarded, every request while one is strict, else off."""
        if self._session is None and self._guarded:
            self._session = await self._browser.new_browser_cdp_session()
            self._session.on("Fetch.requestPaused", self._on_paused)
            # Else a foreign navigation is preconnected before Fetch can pause it (prediction.py).
            # Without a settings page (the headless shell) the pref cannot be set, nor need it be:
            # that embedder does not preconnect. Its document responses are still checked for
            # preload headers, as wherever prediction stays on.
            if self._has_settings_page:
                self._prediction_off = await turn_off_network_prediction(self._session)
        wanted: list[dict[str, str]] | None = None
        if self._guarded:
            strict = any(g.log.strict for g in self._guarded.values())
            wanted = ALL_PATTERNS if strict else DOCUMENT_PATTERNS
            if not self._prediction_off:
                wanted = wanted + DOCUMENT_RESPONSES
        if wanted == self._patterns or self._session is None:
            return
        if wanted is None:
            await self._session.send("Fetch.disable")
        else:
            await self._session.send("Fetch.enable", {"patterns": wanted})
        self._patterns = wanted

    async def _page_session(self, page: Page) -> CDPSession:
        session = self._page_sessions.get(page)
        if session is None:
            session = await page.context.new_cdp_session(page)
            page.context.once("close", self._forget)  # also a spare closed unused, never release()d
            self._page_sessions[page] = session
        return session

    # --- the decision --------------------------------------------------------------------------
    def _on_paused(self, event: dict[str, Any]) -> None:
        responding = "responseStatusCode" in event or "responseErrorReason" in event
        self._background(self._respond(event) if responding else self._decide(event))

    async def _respond(self, event: dict[str, Any]) -> None:
        """A document's response: a guarded frame gets it without a ``Speculation-Rules`` header.

        Chromium fetches the prefetches and prerenders such a header lists in an isolated network
        context that no ``Fetch`` session sees (inline rule sets are removed by ``egress.js``).
        """
        session = self._session
        assert session is not None
        request_id = event["requestId"]
        headers = event.get("responseHeaders") or []
        kept = [h for h in headers if h["name"].lower() != _SPECULATION_HEADER]
        try:
            strip = len(kept) != len(headers) and await self._guarded_frame(event.get("frameId"))
            if strip:  # Chromium refuses new headers without the status they go with
                params = {
                    "requestId": request_id,
                    "responseCode": event["responseStatusCode"],
                    "responseHeaders": kept,
                }
                if event.get("responseStatusText"):
                    params["responsePhrase"] = event["responseStatusText"]
                await session.send("Fetch.continueResponse", params)
            else:
                await session.send("Fetch.continueRequest", {"requestId": request_id})
        except Exception as exc:  # the target went away meanwhile
            log.debug("paused response already gone", error=str(exc))

    async def _guarded_frame(self, frame_id: str | None) -> bool:
        """Does this frame belong to a guarded context (or is it one nobody can attribute)?"""
        try:
            owner = await self._owner(frame_id) if frame_id else None
        except Exception:
            owner = None
        return owner is None or owner in self._guarded

    async def _decide(self, event: dict[str, Any]) -> None:
        session = self._session
        assert session is not None
        request_id = event["requestId"]
        url = event["request"]["url"]
        kind = str(event.get("resourceType") or "Other")
        document = kind == "Document"
        try:
            blocked_for = await self._blocked_for(url, document, event.get("frameId"))
        except Exception as exc:  # a lookup failed: a guarded run must not be let through blind
            log.warning("could not attribute a request; blocking it", url=url, error=str(exc))
            blocked_for = self._forbidding(url, document)
        try:
            if blocked_for:
                for guarded in blocked_for:
                    if document:
                        guarded.log.document(url)
                    else:
                        guarded.log.subresource(kind.lower(), url)
                await session.send("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"})
            else:
                await session.send("Fetch.continueRequest", {"requestId": request_id})
        except Exception as exc:  # the target went away meanwhile
            log.debug("paused request already gone", error=str(exc))

    def _forbidding(self, url: str, document: bool) -> list[_Guarded]:
        """Guarded contexts whose rule stops this request (documents: all; others: strict ones)."""
        return [g for g in self._guarded.values() if (document or g.log.strict) and _forbids(g, url)]

    async def _blocked_for(self, url: str, document: bool, frame_id: str | None) -> list[_Guarded]:
        """The guarded contexts whose rule stops this request (empty: let it go)."""
        forbidding = self._forbidding(url, document)
        if not forbidding:
            return []
        owner = await self._owner(frame_id) if frame_id else None
        if owner is not None:
            guarded = self._guarded.get(owner)
            return [guarded] if guarded is not None and guarded in forbidding else []
        return forbidding  # could not be attributed: fail closed

    async def _owner(self, frame_id: str) -> str | None:
        """The browserContextId a frame belongs to, or None when it cannot be found.

        Real ids are cached, never "unguarded": a context may be guarded later (a spare
        becoming a run), and its frames must then be judged by its rule.
        """
        if frame_id in self._frame_owner:
            return self._frame_owner[frame_id]
        assert self._session is not None
        try:  # pages, popups and out-of-process iframes are targets
            info = await self._session.send("Target.getTargetInfo", {"targetId": frame_id})
            owner: str | None = info["targetInfo"].get("browserContextId")
        except Exception:
            owner = await self._owner_by_frame_tree(frame_id)
        if owner:
            self._frame_owner[frame_id] = owner
        return owner or None

    async def _owner_by_frame_tree(self, frame_id: str) -> str | None:
        """Find a frame inside a page: guarded contexts' pages first, then every other context."""
        guarded = [g.context for g in self._guarded.values()]
        others = [c for c in self._browser.contexts if c not in guarded]
        for context in [*guarded, *others]:
            for page in list(context.pages):
                try:
                    session = await self._page_session(page)
                    tree = await session.send("Page.getFrameTree")
                    if frame_id in _frame_ids(tree["frameTree"]):
                        return self._context_ids.get(context) or await self._context_id(page)
                except Exception:
                    continue
        return None


def _forbids(guarded: _Guarded, url: str) -> bool:
    scheme, host = url_scheme_and_host(url)
    if scheme not in _NETWORK_SCHEMES:
        return False  # data:, blob:, about: — nothing leaves the machine
    return not url_host_allowed(host, guarded.log.allowed_domains)


def _frame_ids(node: dict[str, Any]) -> set[str]:
    ids = {node["frame"]["id"]}
    for child in node.get("childFrames", []):
        ids |= _frame_ids(child)
    return ids


async def _install_websocket_guard(context: BrowserContext, block_log: BlockLog) -> None:
    """Refuse WebSockets of ``context`` to hosts outside allowed_domains (``Fetch`` cannot)."""
    from browserq.browsers.api import Error as PlaywrightError

    allowed = block_log.allowed_domains

    async def on_websocket(ws: WebSocketRoute) -> None:
        _, host = url_scheme_and_host(ws.url)
        if url_host_allowed(host, allowed):
            ws.connect_to_server()
            return
        block_log.subresource("websocket", ws.url)
        try:
            await ws.close(code=1008, reason="blocked: host outside allowed_domains")
        except PlaywrightError:
            pass

    await context.route_web_socket(foreign_url_regex(allowed), on_websocket)
