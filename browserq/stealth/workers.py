"""The identity in worker scopes, where init scripts never run.

A page's init script (``patches.js``) does not reach dedicated, shared or service workers, so
there ``OffscreenCanvas`` still says SwiftShader, and shared and service workers — which no CDP
override reaches either — keep blank client hints. Detectors compare exactly these with the page.
The same ``patches.js`` is therefore run inside each worker *before the worker's own script*:

* **Dedicated and service workers, iframes** — the page's CDP session auto-attaches to them
  paused (``waitForDebuggerOnStart``); browserq evaluates the script in each worker, then resumes
  it (and resumes, untouched, everything else it paused). Non-flat sessions, so the messages go
  through ``Target.sendMessageToTarget`` on the session Playwright already gave us.
  Playwright resumes the same targets from its own session, so for a worker whose script runs
  at once this can lose the race: it is the only way into ``blob:`` and ``data:`` workers.
* **Worker scripts from a URL** (dedicated, shared, service): one browser-level session with
  ``Fetch`` at the response stage for ``Other`` requests prepends the identity script of the
  context that asked for it (Chromium fetched it itself, so headers and TLS are the browser's).
  This always wins; the script skips itself where the other way already ran.

Both are best effort and never fail a run: a target that closes mid-way is skipped.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import weakref
from collections.abc import Coroutine
from typing import Any

import structlog
from playwright.async_api import Browser, CDPSession

log = structlog.get_logger(__name__)

WORKER_TYPES = frozenset({"worker", "service_worker", "shared_worker"})
#: Response headers that no longer describe a body browserq rewrote (decoded, longer).
_STALE_HEADERS = frozenset({"content-length", "content-encoding", "etag", "digest"})
_JAVASCRIPT = re.compile(r"(java|ecma)script", re.I)
_tasks: set[asyncio.Task[Any]] = set()


def _spawn(coro: Coroutine[Any, Any, Any]) -> None:
    task = asyncio.ensure_future(coro)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


async def prime_page_targets(session: CDPSession, script: str) -> None:
    """Have ``session``'s page run ``script`` in each worker it starts, before the worker runs."""
    session.on("Target.attachedToTarget", lambda event: _prime(session, script, event))
    await session.send(
        "Target.setAutoAttach",
        {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": False},
    )


def _prime(session: CDPSession, script: str, event: dict[str, Any]) -> None:
    """Send at once, in order, without waiting for replies: Playwright resumes the same target
    from its own session, and every millisecond here is a chance for the worker to run first."""
    session_id = event["sessionId"]
    calls: list[tuple[str, dict[str, Any]]] = []
    if event["targetInfo"]["type"] in WORKER_TYPES:
        calls.append(("Runtime.evaluate", {"expression": script, "silent": True}))
    calls.append(("Runtime.runIfWaitingForDebugger", {}))
    for number, (method, params) in enumerate(calls, 1):
        message = json.dumps({"id": number, "method": method, "params": params})
        _spawn(_send(session, "Target.sendMessageToTarget", {"sessionId": session_id, "message": message}))


async def _send(session: CDPSession, method: str, params: dict[str, Any]) -> None:
    try:
        await session.send(method, params)
    except Exception as exc:  # the page or the worker went away: nothing left to prime
        log.debug("worker not primed", error=str(exc)[:200])


class WorkerScripts:
    """Prepends a context's identity script to the worker scripts its pages and workers load.

    Chromium fetches the main script of a dedicated, shared or service worker as resource type
    ``Other`` (a worker's ``importScripts`` and module imports are ``Script``), attributed to the
    frame or worker that asked for it; that target's ``browserContextId`` picks the script.
    """

    def __init__(self, session: CDPSession) -> None:
        self.session = session
        self.scripts: dict[str, str] = {}  # CDP browserContextId -> identity script
        self._contexts: dict[str, str | None] = {}  # frame/target id -> its browserContextId

    async def start(self) -> WorkerScripts:
        self.session.on("Fetch.requestPaused", lambda event: _spawn(self._paused(event)))
        await self.session.send(
            "Fetch.enable",
            {"patterns": [{"urlPattern": "*", "resourceType": "Other", "requestStage": "Response"}]},
        )
        return self

    async def _script_for(self, event: dict[str, Any]) -> str | None:
        status = event.get("responseStatusCode")
        if not self.scripts or status is None or not 200 <= status < 300:
            return None
        content_type = next(
            (h["value"] for h in event.get("responseHeaders", []) if h["name"].lower() == "content-type"), ""
        )
        if not _JAVASCRIPT.search(content_type):
            return None
        frame = event.get("frameId") or ""
        if frame not in self._contexts:
            try:
                info = (await self.session.send("Target.getTargetInfo", {"targetId": frame}))["targetInfo"]
                self._contexts[frame] = info.get("browserContextId")
            except Exception:  # a same-process iframe is no target: its workers are primed by attach
                self._contexts[frame] = None
        return self.scripts.get(self._contexts[frame] or "")

    async def _paused(self, event: dict[str, Any]) -> None:
        request_id = event["requestId"]
        try:
            script = await self._script_for(event)
            if script is None:
                await self.session.send("Fetch.continueRequest", {"requestId": request_id})
                return
            reply = await self.session.send("Fetch.getResponseBody", {"requestId": request_id})
            body = base64.b64decode(reply["body"]) if reply["base64Encoded"] else reply["body"].encode()
            headers = [
                h for h in event.get("responseHeaders", []) if h["name"].lower() not in _STALE_HEADERS
            ]
            await self.session.send(
                "Fetch.fulfillRequest",
                {
                    "requestId": request_id,
                    "responseCode": event["responseStatusCode"],
                    "responseHeaders": headers,
                    "body": base64.b64encode(script.encode() + b"\n" + body).decode(),
                },
            )
        except Exception as exc:  # the request was cancelled or the browser is closing
            log.debug("worker script not rewritten", error=str(exc)[:200])

    def forget(self, context_id: str) -> None:
        """A context closed: drop its script and the frame lookups it left (unknown ones too)."""
        self.scripts.pop(context_id, None)
        self._contexts = {k: v for k, v in self._contexts.items() if v not in (context_id, None)}


_WATCHES: weakref.WeakKeyDictionary[Browser, asyncio.Future[WorkerScripts]] = (
    weakref.WeakKeyDictionary()
)


async def worker_scripts(browser: Browser) -> WorkerScripts:
    """The browser's one :class:`WorkerScripts` (started on first use)."""
    watch = _WATCHES.get(browser)
    if watch is None:
        watch = asyncio.ensure_future(_start_watch(browser))
        _WATCHES[browser] = watch
    try:
        return await asyncio.shield(watch)
    except Exception:
        _WATCHES.pop(browser, None)  # the next context tries again
        raise


async def _start_watch(browser: Browser) -> WorkerScripts:
    return await WorkerScripts(await browser.new_browser_cdp_session()).start()
