"""The live-view server: aiohttp, in the worker process's event loop (the one Playwright runs on).

* ``GET /live/{id}?token=T`` redeems the one-time token (the store checks it: unused, unexpired,
  this open handoff), sets a random session cookie scoped to ``/live/{id}`` and redirects to the
  token-free URL, so the token is not left in history. A bad or used token: 403.
* ``GET /live/{id}`` (cookie) serves the page; ``/live/{id}/ws`` (cookie, same Origin) streams
  JPEG frames of the run's current page and takes the person's input: click, wheel, key, text,
  continue, give_up. Input goes through Playwright's mouse and keyboard, so any driver works.
* ``POST /live/{id}/next`` (same Origin, any live view of the fleet, whether it serves that
  handoff or not) answers the page's follow secret from the database: where the run waits now.
  A page whose socket drops for good (its worker died, or handed the run over) asks it at its
  own address every few seconds and moves to the new link (:class:`~browserq.live.session.Follow`).
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
import math
import secrets
from typing import Any
from urllib.parse import urlsplit

import structlog
from aiohttp import WSMsgType, web

from browserq.live.frames import Screencast
from browserq.live.page import live_page
from browserq.live.session import Follow, HumanInput, LiveSession
from browserq.live.typed import TypedText, password_focused

log = structlog.get_logger(__name__)

COOKIE = "browserq_live"
#: A fixed BROWSERQ_LIVE_VIEW_PORT is the first of this many: one per worker process of a host.
PORT_SPAN = 32
#: The most viewers of one handoff at once, and the largest input message.
MAX_VIEWERS = 4
MAX_MESSAGE_BYTES = 4096
MAX_TEXT = 200
#: The largest wheel delta one message scrolls by, in CSS pixels (a mouse notch is ~100).
MAX_WHEEL_DELTA = 10_000.0
#: The longest one input may take to apply (a page that hangs must not hang the socket).
INPUT_TIMEOUT_S = 5.0
_VIEWPORT = "() => ({width: innerWidth, height: innerHeight})"
_NAMED_KEYS = frozenset({
    "Enter", "Tab", "Backspace", "Delete", "Escape", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight",
    "Home", "End", "PageUp", "PageDown", " ",
})


class LiveViewServer:
    """Serves the live views of this process's waiting runs."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, public_url: str | None = None,
                 follow: Follow | None = None) -> None:
        self.host, self.port, self.public_url = host, port, public_url
        self._follow = follow
        self._follows: dict[str, str] = {}  # session cookie → its page's follow secret
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
        app.router.add_post("/live/{hid}/next", self._next)
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

    async def unregister(self, handoff_id: int, reason: str, *, follow: bool = False) -> None:
        """The wait is over: its cast stops, its viewers are told why and disconnected; its
        cookies die. ``follow``: the run goes on elsewhere (a handover): the pages follow it, and a
        server left with nothing to serve stops listening, so that the worker taking the run over
        can listen at this address (where the pages ask)."""
        self._sessions.pop(handoff_id, None)
        for cookie in [c for c, h in self._cookies.items() if h == handoff_id]:
            del self._cookies[cookie]
            self._follows.pop(cookie, None)
        cast = self._casts.pop(handoff_id, None)
        if cast is not None:
            await cast.stop()
        for ws in list(self._sockets.pop(handoff_id, ())):
            with contextlib.suppress(Exception):
                await ws.send_json({"type": "ended", "reason": reason, **({"follow": True} if follow else {})})
                await ws.close()
        if follow and not self._sessions:
            await self._close()

    async def stop(self) -> None:
        for handoff_id in list(self._sessions):
            await self.unregister(handoff_id, "the worker stopped", follow=True)
        await self._close()

    async def _close(self) -> None:
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
            if self._follow is not None and not session.view_only:
                try:
                    self._follows[cookie] = await self._follow.mint(session.run_id, session.handoff_id)
                except Exception as exc:  # the page works; it just cannot follow the run
                    log.warning("no follow token for the live view", handoff_id=session.handoff_id,
                                error=str(exc)[:200])
            # behind a proxy that serves this worker under a path (BROWSERQ_LIVE_VIEW_PUBLIC_URL's)
            own = f"{urlsplit(self._base or '').path.rstrip('/')}/live/{session.handoff_id}"
            redirect = web.HTTPSeeOther(own)
            redirect.set_cookie(COOKIE, cookie, httponly=True, samesite="Strict",
                                path=own,
                                secure=bool(self.public_url and self.public_url.startswith("https:")))
            raise redirect
        self._check_cookie(request, session)
        nonce = secrets.token_urlsafe(16)
        body = live_page(run_id=session.run_id, message=session.message, until=session.until,
                         view_only=session.view_only, follow=self._follows.get(request.cookies.get(COOKIE, "")),
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

    async def _next(self, request: web.Request) -> web.StreamResponse:
        """Where the run of a page's handoff waits now (the page's follow secret in the body)."""
        origin = request.headers.get("Origin")
        if origin is not None and origin.rstrip("/") != f"{request.scheme}://{request.host}":
            raise web.HTTPForbidden(text="cross-origin request refused")
        if self._follow is None:
            raise web.HTTPNotFound(text="this live view cannot follow runs")
        try:
            handoff_id = int(request.match_info["hid"])
            if (request.content_length or 0) > MAX_MESSAGE_BYTES:
                raise ValueError("too large")
            secret = (await request.json())["follow"]
            if not isinstance(secret, str):
                raise TypeError("not a string")
        except (ValueError, KeyError, TypeError):
            raise web.HTTPBadRequest(text="not a follow request") from None
        if handoff_id in self._sessions and secret in self._follows.values():  # served here: only the socket dropped
            return web.json_response({"state": "here"})
        return web.json_response(await self._follow.answer(secret, handoff_id))

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
        except ConnectionError:  # the viewer went away while an input was applied
            log.debug("live view viewer left mid-input", handoff_id=session.handoff_id)
        finally:
            viewers.discard(ws)
            log.debug("live view viewer left", handoff_id=session.handoff_id, viewers=len(viewers))
            await cast.remove(ws)
            if cast.viewers == 0 and self._casts.get(session.handoff_id) is cast:
                del self._casts[session.handoff_id]
        return ws

    async def _handle(self, ws: web.WebSocketResponse, session: LiveSession, data: str) -> None:
        try:
            message = json.loads(data)
            kind = message["type"]
        except (ValueError, KeyError, TypeError):
            await _reply(ws, {"type": "error", "message": "not a live-view message"})
            return
        if session.view_only and kind in ("continue", "give_up", "click", "wheel", "key", "text"):
            await _reply(ws, {"type": "error", "message": "view only: the run is running; input, Continue "
                              "and Give up are taken while it waits for a person"})
            return
        if kind == "continue":
            session.on_continue()
        elif kind == "give_up":
            session.on_give_up()
        elif kind in ("click", "wheel", "key", "text"):
            try:
                event = await asyncio.wait_for(_apply(session.page(), kind, message, session.typing),
                                               INPUT_TIMEOUT_S)
            except (ValueError, TypeError) as exc:
                await _reply(ws, {"type": "error", "message": str(exc)[:200]})
                return
            except Exception as exc:  # the page refused it (closing, busy): the person tries again
                await _reply(ws, {"type": "error", "message": f"the page did not take it: {str(exc)[:150]}"})
                return
            await session.on_input(event)
        else:
            await _reply(ws, {"type": "error", "message": f"unknown message type {str(kind)[:30]!r}"})


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


async def _apply(page: Any, kind: str, message: dict[str, Any], typing: TypedText) -> HumanInput:
    """Forward one input to the page; what is recorded of it (no character typed, ever)."""
    if kind in ("click", "wheel"):
        x, y = await _point(page, message)
        if kind == "click":
            await page.mouse.click(x, y)
            typing.moved_on()
            return HumanInput("click", x=round(x), y=round(y), button="left")
        dx, dy = (max(-MAX_WHEEL_DELTA, min(MAX_WHEEL_DELTA, _number(message, k, 0))) for k in ("dx", "dy"))
        await page.mouse.move(x, y)
        await page.mouse.wheel(dx, dy)
        return HumanInput("wheel", x=round(x), y=round(y), delta_x=dx, delta_y=dy)
    if kind == "key":
        key = message["key"]
        if not isinstance(key, str) or key not in _NAMED_KEYS:
            raise ValueError(f"key {str(key)[:20]!r} is not one the live view forwards")
        password = await password_focused(page)
        await page.keyboard.press(key)
        typing.key(key, password)
        named = None if password or key == " " else key  # a space is typed text
        return HumanInput("key", key=named, length=1, password=password)
    text = message["text"]
    if not isinstance(text, str) or not text or len(text) > MAX_TEXT:
        raise ValueError(f"text must be 1 to {MAX_TEXT} characters, one message each")
    password = await password_focused(page)
    await page.keyboard.insert_text(text)
    typing.text(text, password)
    return HumanInput("text", length=len(text), password=password)


def _number(message: dict[str, Any], key: str, default: float | None = None) -> float:
    """``message[key]`` as a finite number (JSON lets ``NaN``, ``Infinity`` and 400-digit
    integers through; Chromium's input pipeline stalls on some, and every later input with it)."""
    value = message.get(key, default)
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if math.isfinite(number):
            return number
    raise ValueError(f"{key} must be a finite number, not {str(value)[:30]}")


async def _point(page: Any, message: dict[str, Any]) -> tuple[float, float]:
    """The message's ``x``/``y`` inside the page's viewport: a point off it (``x: 1e308``, a
    negative one) goes to its nearest edge, where the page can take it."""
    x, y = _number(message, "x"), _number(message, "y")
    size = page.viewport_size or await page.evaluate(_VIEWPORT)
    width, height = max(1.0, float(size["width"])), max(1.0, float(size["height"]))
    return min(max(x, 0.0), width - 1), min(max(y, 0.0), height - 1)


async def _reply(ws: web.WebSocketResponse, message: dict[str, Any]) -> None:
    """Answer a viewer who may have left meanwhile (a reply to a closed socket is dropped)."""
    if ws.closed:
        return
    try:
        await ws.send_json(message)
    except ConnectionError:  # gone between the check and the write
        log.debug("live view reply not sent: the viewer left", reply=message.get("type"))


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
