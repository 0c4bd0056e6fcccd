"""The live view's frames: one CDP screencast per handoff, shared by its viewers.

Real Chromium and a waiting run, set up as in :mod:`tests.live.test_handoff` (its runtime
fixture and helpers are imported from there). Whether a frame shows the changed page is judged by
its size: the pages start nearly empty (a small JPEG) and a change fills the screen with text (a
JPEG several times larger), so no image decoding is needed and nothing is timed.

``test_docs_screenshot`` writes ``docs/img/live-view.png`` (the live view as a person sees it, in a
second headless Chromium) and runs only with ``BROWSERQ_DOCS_SCREENSHOTS=1``; it is skipped
otherwise.
"""

from __future__ import annotations

import asyncio
import base64
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from playwright.async_api import Page

from browserq.browsers.api import async_playwright
from browserq.execute.runtime import Runtime
from browserq.live.frames import Screencast
from browserq.live.server import LiveViewServer
from browserq.runner import RunOutcome
from tests.conftest import template
from tests.live.test_handoff import HEAD, _in_thread, _waiting_link
from tests.live.test_handoff import runtime as runtime  # the fixture (a runtime of this module)
from tests.support import REPO
from tests.support.http import html_pages, serve_http

#: Text enough to fill a screen: what a page shows once it changed (a large JPEG).
_TEXT = "<p id=\"filled\" style=\"font:13px/1.2 monospace;word-break:break-all;margin:0\">" + "".join(
    f"{i * 7919 % 100003:05d}qwXz{i:04d}" for i in range(4000)) + "</p>"
_FILL = "document.body.insertAdjacentHTML('beforeend', document.getElementById('more').innerHTML)"
PAGES = {
    "/still": HEAD + '<button id="show" style="position:fixed;left:10%;top:10%;width:20%;height:15%" '
    f'onclick="this.remove();{_FILL}">show</button>'
    f'<template id="more">{_TEXT}</template></body></html>',
    # each click: a burst of paints (a counter, one per animation frame, for ~half a second) that
    # ends by filling the page, or by emptying it again: the last paint comes while the cast holds
    # its acks to stay under MAX_FPS
    "/burst": HEAD + '<button id="show" style="position:fixed;left:10%;top:10%;width:20%;height:15%" '
    'onclick="let n=0;const tick=()=>{document.getElementById(\'n\').textContent=++n;if(n<30)'
    'requestAnimationFrame(tick);else if(document.getElementById(\'filled\'))document.getElementById('
    f'\'filled\').remove();else{{{_FILL}}}}};requestAnimationFrame(tick)">show</button>'
    '<b id="n" style="position:fixed;right:10%;bottom:10%"></b>'
    f'<template id="more">{_TEXT}</template></body></html>',
    "/opener": HEAD + _TEXT + '<a id="pop" href="/popup" target="_blank">open</a></body></html>',
    "/popup": HEAD + '<button id="closeme" style="position:fixed;left:10%;top:10%;width:20%;'
    'height:15%" onclick="window.close()">close</button></body></html>',
    "/captcha": HEAD.replace('style="margin:0"', 'style="margin:0;background:#eef1f5;font:16px '
                             'system-ui,sans-serif;color:#222"') +
    '<div style="max-width:760px;margin:110px auto;background:#fff;border:1px solid #d4d8de;'
    'border-radius:10px;padding:36px 44px;box-shadow:0 2px 10px #0002">'
    '<h1 style="font-size:40px;margin:0 0 12px">Please verify you are human</h1>'
    '<p style="font-size:24px;color:#555;margin:0 0 28px">Shop-o-Matic saw unusual traffic from '
    'your network.</p><label style="display:flex;align-items:center;gap:18px;font-size:28px;'
    'border:1px solid #c8ccd2;border-radius:6px;padding:22px;background:#f9f9f9"><input '
    'type="checkbox" style="width:36px;height:36px">I\'m not a robot</label></div></body></html>',
}
WAIT = 15  # the longest a test waits for one thing (a failure guard, not a timing assert)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_http(html_pages(PAGES)) as host:
        yield f"http://{host}"


def _handoff(
    runtime: Runtime, site: str, path: str, before: str = "", after: str = ""
) -> tuple[threading.Thread, list[RunOutcome], str, int]:
    """A run on ``site + path`` that waits for a person (``before``/``after``: more steps):
    (its thread, its outcome once done, run id, handoff id)."""
    loaded = template(f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{site}{path}"}}{before}
          - {{id: ask, action: handoff, message: "The site shows a captcha: tick the box, then press Continue.", timeout_s: 120}}{after}
    """)
    thread, done = _in_thread(runtime, loaded)
    run_id, _link = _waiting_link(runtime, thread)
    handoff = runtime.store.handoffs.open_handoff(run_id)
    assert handoff is not None
    return thread, done, run_id, handoff.id


def _link(runtime: Runtime, run_id: str) -> str:
    link = runtime.store.handoffs.mint_live_token(run_id, purpose="test", ttl_s=60)
    assert link
    return link


def _server(runtime: Runtime) -> LiveViewServer:
    return runtime.runner.live.instance  # type: ignore[return-value]  # made by the wait: not None here


@asynccontextmanager
async def _viewer(link: str) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    """A person's live-view socket, opened through the one-time ``link``."""
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(link) as page:
            assert page.status == 200
        async with http.ws_connect(link.split("?", 1)[0] + "/ws") as ws:
            yield ws


async def _frame(ws: aiohttp.ClientWebSocketResponse, what: str,
                 where: Callable[[dict[str, Any]], bool] = lambda _m: True) -> dict[str, Any]:
    """The next frame message ``where`` holds for (its JPEG decoded into ``jpeg``)."""
    deadline = time.monotonic() + WAIT
    while (left := deadline - time.monotonic()) > 0:
        try:
            message = await ws.receive_json(timeout=left)
        except TimeoutError:
            break
        if message["type"] == "frame":
            message["jpeg"] = base64.b64decode(message["data"])
            assert message["jpeg"][:2] == b"\xff\xd8"  # a JPEG
            if where(message):
                return message
    raise AssertionError(f"no frame {what} within {WAIT} s")


async def _eventually(holds: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while not (value := holds()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)
    return value


def _bigger(than: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    """A frame of the changed page: text fills what was nearly empty."""
    return lambda m: len(m["jpeg"]) > 3 * len(than["jpeg"])


def _smaller(than: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    """A frame of the page emptied again."""
    return lambda m: 3 * len(m["jpeg"]) < len(than["jpeg"])


def _end(runtime: Runtime, thread: threading.Thread, run_id: str) -> None:
    """Press Continue (if the run still waits) and let the run finish."""
    async def press(link: str) -> None:
        async with _viewer(link) as ws:
            await ws.send_json({"type": "continue"})
            await ws.receive(timeout=WAIT)

    link = runtime.store.handoffs.mint_live_token(run_id, purpose="test", ttl_s=60) if thread.is_alive() else None
    if link:
        asyncio.run(press(link))
    thread.join(30)
    assert not thread.is_alive()


Waiting = Callable[..., tuple[threading.Thread, list[RunOutcome], str, int]]


@pytest.fixture
def waiting(runtime: Runtime, site: str) -> Iterator[Waiting]:
    """Start a run that waits for a person (:func:`_handoff`); one a test left waiting ends
    after it, so that the next test's run is the only one waiting."""
    started: list[tuple[threading.Thread, str]] = []

    def start(path: str, before: str = "", after: str = "") -> tuple[threading.Thread, list[RunOutcome], str, int]:
        thread, done, run_id, handoff_id = _handoff(runtime, site, path, before, after)
        started.append((thread, run_id))
        return thread, done, run_id, handoff_id

    yield start
    for thread, run_id in started:
        _end(runtime, thread, run_id)


def test_a_viewer_gets_a_frame_at_once_and_another_when_the_page_changes(runtime: Runtime, waiting: Waiting) -> None:
    thread, _done, run_id, handoff_id = waiting("/still")

    async def watch() -> None:
        async with _viewer(_link(runtime, run_id)) as ws:
            first = await _frame(ws, "at once")
            assert first["w"] > 0 and first["h"] > 0  # the CSS viewport the frame shows
            cast = _server(runtime).screencast(handoff_id)
            assert cast is not None
            await _eventually(lambda: cast.casting is not None, "the CDP screencast to run")
            # the person clicks "show" (10-30% across, 10-25% down) through the forwarded input
            await ws.send_json({"type": "click", "x": first["w"] * 0.2, "y": first["h"] * 0.17})
            changed = await _frame(ws, "of the changed page", _bigger(first))
            assert (changed["w"], changed["h"]) == (first["w"], first["h"])
            assert cast.starts == 1

    asyncio.run(watch())
    _end(runtime, thread, run_id)
    assert [s.action for s in runtime.store.steps.steps(run_id) if s.step_path == "1~input"] == ["human_click"]


def test_the_last_paint_of_a_burst_reaches_the_viewer(runtime: Runtime, waiting: Waiting) -> None:
    """Chromium drops a paint while three cast frames wait for their ack, and the cast holds acks
    to stay under MAX_FPS: the burst's last paint (the filled page) may never be cast, and a still
    page sends no more. The viewer must see it anyway, or it looks at a stale page until the
    next change."""
    thread, _done, run_id, handoff_id = waiting("/burst")

    async def watch() -> None:
        async with _viewer(_link(runtime, run_id)) as ws:
            first = await _frame(ws, "at once")
            await _eventually(lambda: _server(runtime).screencast(handoff_id).casting is not None,
                              "the CDP screencast to run")
            click = {"type": "click", "x": first["w"] * 0.2, "y": first["h"] * 0.17}
            for burst in range(3):  # filled, emptied, filled again
                await ws.send_json(click)
                if burst % 2 == 0:
                    filled = await _frame(ws, f"of the page burst {burst + 1} filled", _bigger(first))
                else:
                    await _frame(ws, f"of the page burst {burst + 1} emptied", _smaller(filled))

    asyncio.run(watch())
    _end(runtime, thread, run_id)


def test_two_viewers_share_one_screencast_that_stops_with_the_last(runtime: Runtime, waiting: Waiting) -> None:
    thread, _done, run_id, handoff_id = waiting("/still")
    server = _server(runtime)

    async def watch() -> Screencast:
        async with _viewer(_link(runtime, run_id)) as one:
            first = await _frame(one, "for the first viewer")
            async with _viewer(_link(runtime, run_id)) as two:
                await _frame(two, "at once for the second viewer")
                cast = server.screencast(handoff_id)
                assert cast is not None and cast.viewers == 2
                await _eventually(lambda: cast.casting is not None, "the CDP screencast to run")
                await one.send_json({"type": "click", "x": first["w"] * 0.2, "y": first["h"] * 0.17})
                for ws in (one, two):
                    await _frame(ws, "of the changed page", _bigger(first))
                assert cast.starts == 1  # one cast for both
            await _eventually(lambda: cast.viewers == 1, "the second viewer to leave")
            assert server.screencast(handoff_id) is cast and cast.casting is not None
        await _eventually(lambda: server.screencast(handoff_id) is None, "the cast to stop")
        return cast

    cast = asyncio.run(watch())
    assert cast.casting is None and cast.viewers == 0
    _end(runtime, thread, run_id)


def test_the_cast_moves_with_the_runs_page(runtime: Runtime, waiting: Waiting) -> None:
    """The run is on a popup; the person closes it; the run is back on its opener and the cast
    follows there."""
    opens = '\n          - {action: click, selector: "#pop", opens: tab}'
    thread, _done, run_id, handoff_id = waiting("/opener", before=opens)

    async def watch() -> None:
        async with _viewer(_link(runtime, run_id)) as ws:
            popup = await _frame(ws, "of the popup")
            cast = _server(runtime).screencast(handoff_id)
            assert cast is not None
            on_popup = await _eventually(lambda: cast.casting, "the CDP screencast to run")
            assert on_popup.url.endswith("/popup")
            await ws.send_json({"type": "click", "x": popup["w"] * 0.2, "y": popup["h"] * 0.17})
            await _frame(ws, "of the opener", _bigger(popup))
            await _eventually(lambda: cast.casting not in (None, on_popup), "the cast to move")
            assert cast.casting.url.endswith("/opener") and cast.starts == 2

    asyncio.run(watch())
    _end(runtime, thread, run_id)


def test_without_cdp_the_frames_are_screenshots(
    runtime: Runtime, waiting: Waiting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A browser without CDP (Firefox, WebKit): the viewer still gets frames, polled."""
    async def no_cdp(_self: Screencast, _page: Any) -> None:
        return None

    monkeypatch.setattr(Screencast, "_cdp_session", no_cdp)
    thread, _done, run_id, handoff_id = waiting("/still")

    async def watch() -> None:
        async with _viewer(_link(runtime, run_id)) as ws:
            first = await _frame(ws, "at once")
            await ws.send_json({"type": "click", "x": first["w"] * 0.2, "y": first["h"] * 0.17})
            await _frame(ws, "of the changed page", _bigger(first))
            cast = _server(runtime).screencast(handoff_id)
            assert cast is not None and cast.casting is None and cast.starts == 0

    asyncio.run(watch())
    _end(runtime, thread, run_id)


def test_the_cast_stops_when_the_handoff_ends(runtime: Runtime, waiting: Waiting) -> None:
    thread, _done, run_id, handoff_id = waiting("/still")
    server = _server(runtime)

    async def watch() -> tuple[Screencast, dict[str, Any], aiohttp.WSMsgType]:
        async with _viewer(_link(runtime, run_id)) as ws:
            await _frame(ws, "at once")
            cast = server.screencast(handoff_id)
            assert cast is not None
            await _eventually(lambda: cast.casting is not None, "the CDP screencast to run")
            await ws.send_json({"type": "continue"})
            while (message := await ws.receive_json(timeout=WAIT))["type"] == "frame":
                pass
            after = await ws.receive(timeout=WAIT)  # no frame after "ended": the socket closes
            return cast, message, after.type

    cast, ended, after = asyncio.run(watch())
    assert ended == {"type": "ended", "reason": "a person pressed Continue"}
    assert after in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
    assert server.screencast(handoff_id) is None
    assert cast.casting is None and cast.viewers == 0
    thread.join(30)
    assert runtime.store.handoffs.handoffs(run_id)[0].outcome == "continued"


async def _until_js(page: Page, predicate: str) -> None:
    """Wait for ``predicate`` in the live view (``wait_for_function`` would need the
    ``unsafe-eval`` its CSP refuses)."""
    deadline = time.monotonic() + WAIT
    while not await page.evaluate(predicate):
        assert time.monotonic() < deadline, f"timed out waiting for {predicate}"
        await asyncio.sleep(0.05)


async def _in_browser(link: str, act: Callable[[Page], Awaitable[None]], executable: str | None) -> None:
    """Open the live view through ``link`` in a second headless Chromium, as a person would, and
    ``act`` once its first frame shows."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1100, "height": 800})
            await page.goto(link)
            await _until_js(page, "() => document.getElementById('screen').naturalWidth > 0")
            await act(page)
        finally:
            await browser.close()


def test_a_click_on_the_shown_frame_lands_on_the_page(runtime: Runtime, waiting: Waiting) -> None:
    """The page script maps a click on the (scaled down) frame to the run's CSS pixels: the click
    lands on the button, which fills the page with text the run reads after the handoff."""
    thread, done, run_id, _handoff_id = waiting("/still", after='\n          - {action: get, selector: "#filled", into: filled, timeout_s: 1}')

    async def click(page: Page) -> None:
        box = await page.locator("#screen").bounding_box()
        assert box is not None and box["width"] < 1100  # shown smaller than the run's viewport
        await page.mouse.click(box["x"] + box["width"] * 0.2, box["y"] + box["height"] * 0.17)
        await _until_js(page, "() => document.getElementById('status').textContent.startsWith('connected')")
        clicks = lambda: [s for s in runtime.store.steps.steps(run_id) if s.action == "human_click"]  # noqa: E731
        await _eventually(clicks, "the click to be recorded")
        await page.click("#continue")

    asyncio.run(_in_browser(_link(runtime, run_id), click, runtime.settings.resolve_chromium()))
    thread.join(30)
    [outcome] = done
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert outcome.outputs["filled"].startswith("00000qwXz0000")


@pytest.mark.skipif(os.environ.get("BROWSERQ_DOCS_SCREENSHOTS") != "1",
                    reason="writes docs/img/live-view.png; set BROWSERQ_DOCS_SCREENSHOTS=1")
def test_docs_screenshot(runtime: Runtime, waiting: Waiting) -> None:
    """docs/img/live-view.png: the live view of a run stopped at a captcha, in a 1100x800 window."""
    thread, _done, run_id, _handoff_id = waiting("/captcha")
    target = REPO / "docs" / "img" / "live-view.png"

    async def shoot(page: Page) -> None:
        await _until_js(page, "() => document.getElementById('status').textContent.startsWith('connected')")
        await _until_js(page, "() => /[0-9]:[0-9]{2} left/.test(document.getElementById('left').textContent)")
        await page.screenshot(path=str(target))

    asyncio.run(_in_browser(_link(runtime, run_id), shoot, runtime.settings.resolve_chromium()))
    _end(runtime, thread, run_id)
    assert target.stat().st_size > 10_000


def test_a_fixed_port_is_the_first_of_a_span_one_per_worker_process() -> None:
    """Prefork children share BROWSERQ_LIVE_VIEW_PORT: the second takes the next free port."""
    from browserq.live.server import PORT_SPAN, LiveViewServer
    from tests.support.http import free_port

    async def two() -> tuple[str, str]:
        port = free_port()
        first = LiveViewServer("127.0.0.1", port, "https://live.example.com/{port}")
        second = LiveViewServer("127.0.0.1", port)
        try:
            return await first.start(), await second.start()
        finally:
            await first.stop()
            await second.stop()

    first_url, second_url = asyncio.run(two())
    port = int(first_url.rsplit("/", 1)[1])
    assert first_url == f"https://live.example.com/{port}"
    # The next free port of the span: port + 1 unless another process (a parallel test) holds it.
    second_host, second_port = second_url.removeprefix("http://").rsplit(":", 1)
    assert second_host == "127.0.0.1" and port < int(second_port) < port + PORT_SPAN, second_url


def test_behind_a_path_prefix_the_redirect_and_cookie_keep_it() -> None:
    """BROWSERQ_LIVE_VIEW_PUBLIC_URL with a path (a proxy serving each worker under /w/<port>):
    the token-free redirect and the session cookie stay under that path."""
    from datetime import UTC, datetime

    from browserq.live.server import LiveViewServer
    from browserq.live.session import LiveSession

    async def opened() -> tuple[int, str, str]:
        server = LiveViewServer("127.0.0.1", 0, "http://127.0.0.1/w/{port}")
        base = await server.start()

        async def redeem(token: str) -> bool:
            return token == "good"

        async def ignore(_event: object) -> None:
            return None

        server.register(LiveSession(run_id="r" * 32, handoff_id=7, message="m", until=None,
                                    deadline=datetime.now(UTC), page=lambda: None, redeem=redeem,
                                    on_input=ignore, on_continue=lambda: None, on_give_up=lambda: None))
        port = base.rsplit("/", 1)[1]
        try:
            async with aiohttp.ClientSession() as http, http.get(
                f"http://127.0.0.1:{port}/live/7?token=good", allow_redirects=False
            ) as response:
                return response.status, response.headers["Location"], response.headers["Set-Cookie"]
        finally:
            await server.stop()

    status, location, cookie = asyncio.run(opened())
    assert status == 303 and location.endswith("/live/7") and location.startswith("/w/")
    assert f"Path={location}" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
