"""The live-view server: aiohttp, in the worker process's event loop (the one Playwright runs on).

* ``GET /live/{id}?token=T`` redeems the one-time token (the store checks it: unused, unexpired,
  this open handoff), sets a random session cookie scoped to ``/live/{id}`` and redirects to the
  token-free URL, so the token is not left in history. A bad or used token: 403.
* ``GET /live/{id}`` (cookie) serves the page; ``/live/{id}/ws`` (cookie, same Origin) streams
  JPEG frames of the run's current page and takes the person's input: click, wheel, key, text,
  continue, give_up. Input goes through Playwright's mouse and keyboard, so any driver works.
* Only registered handoffs are served; nothing else of the browser is reachable. Every response
  has a strict CSP (a nonce per page), ``frame-ancestors 'none'``, ``no-referrer`` and ``no-store``.

Frames come from one CDP screencast per handoff, shared by its viewers (:mod:`browserq.live.frames`:
started with the first viewer, stopped with the last one or the handoff; screenshots every
:data:`~browserq.live.frames.FRAME_INTERVAL_S` where there is no CDP).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from typing import Any
from urllib.parse import urlsplit

import structlog
from aiohttp import WSMsgType, web

from browserq.live.frames import Screencast
from browserq.live.page import live_page
from browserq.live.session import HumanInput, LiveSession

log = structlog.get_logger(__name__)

COOKIE = "browserq_live"
#: A fixed BROWSERQ_LIVE_VIEW_PORT is the first of this many: one per worker process of a host.
PORT_SPAN = 32
#: The most viewers of one handoff at once, and the largest input message.
MAX_VIEWERS = 4
MAX_MESSAGE_BYTES = 4096
MAX_TEXT = 200
#: True when the focused element (through same-origin frames) is a password field.
_PASSWORD_FOCUSED = """() => { let d = document, e = d.activeElement;
  while (e && e.tagName === 'IFRAME') { try { d = e.contentDocument; e = d.activeElement; } catch (_) { break; } }
  return !!e && e.tagName === 'INPUT' && (e.type || '').toLowerCase() === 'password'; }"""
_NAMED_KEYS = frozenset({
    "Enter", "Tab", "Backspace", "Delete", "Escape", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight",
    "Home", "End", "PageUp", "PageDown", " ",
})


class LiveViewServer:
    """Serves the live views of this process's waiting runs."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, public_url: str | None = None) -> None:
        self.host, self.port, self.public_url = host, port, public_url
        self._sessions: dict[int, LiveSession] = {}
        self._cookies: dict[str, int] = {}  # session cookie → handoff id
        self._sockets: dict[int, set[web.WebSocketResponse]] = {}
        self._casts: dict[int, Screencast] = {}  # handoff id → its viewers' frames
        self._runner: web.AppRunner | None = None
        self._base: str | None = None

    async def start(self) -> str:
        """Listen (once); the base URL people reach it at."""
        if self._base is not None:
            return self._base
        app = web.Application(middlewares=[_headers])
        app.router.add_get("/live/{hid}", self._page)
        app.router.add_get("/live/{hid}/ws", self._socket)
        self._runner, port = await _listen(app, self.host, self.port)
        self._base = (self.public_url.replace("{port}", str(port)).rstrip("/") if self.public_url
                      else f"http://{self.host}:{port}")
        return self._base

    @property
    def base_url(self) -> str | None:
        return self._base

    def register(self, session: LiveSession) -> None:
        self._sessions[session.handoff_id] = session

    def screencast(self, handoff_id: int) -> Screencast | None:
        """The frames of a handoff someone watches now (None while nobody does)."""
        return self._casts.get(handoff_id)

    async def unregister(self, handoff_id: int, reason: str) -> None:
        """The wait is over: its cast stops, its viewers are told why and disconnected; its
        cookies die."""
        self._sessions.pop(handoff_id, None)
        for cookie in [c for c, h in self._cookies.items() if h == handoff_id]:
            del self._cookies[cookie]
        cast = self._casts.pop(handoff_id, None)
        if cast is not None:
            await cast.stop()
        for ws in list(self._sockets.pop(handoff_id, ())):
            with contextlib.suppress(Exception):
                await ws.send_json({"type": "ended", "reason": reason})
                await ws.close()

    async def stop(self) -> None:
        for handoff_id in list(self._sessions):
            await self.unregister(handoff_id, "the worker stopped")
        if self._runner is not None:
            await self._runner.cleanup()
        self._runner, self._base = None, None

    # --- HTTP ------------------------------------------------------------------------------------
    def _session_of(self, request: web.Request) -> LiveSession:
        try:
            handoff_id = int(request.match_info["hid"])
        except ValueError:
            raise web.HTTPNotFound(text="no such live view") from None
        session = self._sessions.get(handoff_id)
        if session is None:
            raise web.HTTPNotFound(text="no run waits here (the handoff ended, or never was)")
        return session

    async def _page(self, request: web.Request) -> web.StreamResponse:
        session = self._session_of(request)
        token = request.query.get("token")
        if token is not None:
            if not await session.redeem(token):
                raise web.HTTPForbidden(text="this live-view link is invalid, used or expired; "
                                             f"get a new one: browserq live {session.run_id}")
            cookie = secrets.token_urlsafe(32)
            self._cookies[cookie] = session.handoff_id
            # behind a proxy that serves this worker under a path (BROWSERQ_LIVE_VIEW_PUBLIC_URL's)
            own = f"{urlsplit(self._base or '').path.rstrip('/')}/live/{session.handoff_id}"
            response = web.HTTPSeeOther(own)
            response.set_cookie(COOKIE, cookie, httponly=True, samesite="Strict",
                                path=own,
                                secure=bool(self.public_url and self.public_url.startswith("https:")))
            raise response
        self._check_cookie(request, session)
        nonce = secrets.token_urlsafe(16)
        body = live_page(run_id=session.run_id, message=session.message, until=session.until,
                         view_only=session.view_only,
                         deadline=session.deadline.isoformat(), nonce=nonce)
        response = web.Response(text=body, content_type="text/html")
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "img-src data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
        )
        return response

    def _check_cookie(self, request: web.Request, session: LiveSession) -> None:
        if self._cookies.get(request.cookies.get(COOKIE, "")) != session.handoff_id:
            raise web.HTTPForbidden(text="open the live view through its one-time link "
                                         f"(browserq live {session.run_id})")

    # --- the socket ------------------------------------------------------------------------------
    async def _socket(self, request: web.Request) -> web.StreamResponse:
        session = self._session_of(request)
        self._check_cookie(request, session)
        origin = request.headers.get("Origin")
        if origin is not None and origin.rstrip("/") != f"{request.scheme}://{request.host}":
            raise web.HTTPForbidden(text="cross-origin live-view socket refused")
        viewers = self._sockets.setdefault(session.handoff_id, set())
        if len(viewers) >= MAX_VIEWERS:
            raise web.HTTPTooManyRequests(text=f"at most {MAX_VIEWERS} viewers of one live view")
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE_BYTES, heartbeat=20)
        await ws.prepare(request)
        if self._sessions.get(session.handoff_id) is not session:  # it ended meanwhile
            if not self._sockets.get(session.handoff_id):
                self._sockets.pop(session.handoff_id, None)
            await ws.send_json({"type": "ended", "reason": "the handoff ended"})
            await ws.close()
            return ws
        viewers.add(ws)
        cast = self._casts.get(session.handoff_id)
        if cast is None:
            cast = self._casts[session.handoff_id] = Screencast(session.page)
        try:
            await cast.add(ws)
            async for message in ws:
                if message.type is not WSMsgType.TEXT:
                    continue
                await self._handle(ws, session, message.data)
        finally:
            viewers.discard(ws)
            await cast.remove(ws)
            if cast.viewers == 0 and self._casts.get(session.handoff_id) is cast:
                del self._casts[session.handoff_id]
        return ws

    async def _handle(self, ws: web.WebSocketResponse, session: LiveSession, data: str) -> None:
        try:
            message = json.loads(data)
            kind = message["type"]
        except (ValueError, KeyError, TypeError):
            await ws.send_json({"type": "error", "message": "not a live-view message"})
            return
        if session.view_only and kind in ("continue", "give_up", "click", "wheel", "key", "text"):
            await ws.send_json({"type": "error", "message": "view only: the run is running; input, Continue "
                                "and Give up are taken while it waits for a person"})
            return
        if kind == "continue":
            session.on_continue()
        elif kind == "give_up":
            session.on_give_up()
        elif kind in ("click", "wheel", "key", "text"):
            try:
                event = await asyncio.wait_for(_apply(session.page(), kind, message), 5.0)
            except (ValueError, TypeError) as exc:
                await ws.send_json({"type": "error", "message": str(exc)[:200]})
                return
            except Exception as exc:  # the page refused it (closing, busy): the person tries again
                await ws.send_json({"type": "error", "message": f"the page did not take it: {str(exc)[:150]}"})
                return
            await session.on_input(event)
        else:
            await ws.send_json({"type": "error", "message": f"unknown message type {str(kind)[:30]!r}"})


async def _listen(app: web.Application, host: str, first_port: int) -> tuple[web.AppRunner, int]:
    """Serve ``app`` on ``first_port`` (0: any free port) or, when it is taken, on the next free one
    of :data:`PORT_SPAN`: the prefork children of one worker share the setting, each takes a port."""
    ports = [0] if first_port == 0 else list(range(first_port, min(first_port + PORT_SPAN, 65536)))
    error: OSError | None = None
    for port in ports:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
            return runner, runner.addresses[0][1]
        except OSError as exc:
            error = exc
            await runner.cleanup()
    raise OSError(f"no free port for the live view on {host} in {ports[0]}-{ports[-1]}: {error}")


async def _apply(page: Any, kind: str, message: dict[str, Any]) -> HumanInput:
    """Forward one input to the page; what is recorded of it."""
    if kind in ("click", "wheel"):
        x, y = float(message["x"]), float(message["y"])
        if kind == "click":
            await page.mouse.click(x, y)
            return HumanInput("click", x=round(x), y=round(y), button="left")
        dx, dy = float(message.get("dx", 0)), float(message.get("dy", 0))
        await page.mouse.move(x, y)
        await page.mouse.wheel(dx, dy)
        return HumanInput("wheel", x=round(x), y=round(y), delta_x=dx, delta_y=dy)
    password = bool(await page.evaluate(_PASSWORD_FOCUSED))
    if kind == "key":
        key = str(message["key"])
        if key not in _NAMED_KEYS:
            raise ValueError(f"key {key[:20]!r} is not one the live view forwards")
        await page.keyboard.press(key)
        return HumanInput("key", key=None if password else key, length=1, password=password)
    text = str(message["text"])[:MAX_TEXT]
    await page.keyboard.insert_text(text)
    return HumanInput("text", text=None if password else text, length=len(text), password=password)


@web.middleware
async def _headers(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        response = exc
    response.headers.setdefault("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"
    if isinstance(response, web.HTTPException):
        raise response
    return response


__all__ = ["LiveViewServer"]
