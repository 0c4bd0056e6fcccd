"""Resource blocking in a real Chromium against a tiny local server that counts what it serves."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from browserq.browsers.api import async_playwright
from browserq.limits import (
    BlockStats,
    install_blocking,
)

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PAGE = b"""<!doctype html>
<html><head><title>blocking test</title>
<link rel="stylesheet" href="/style.css">
<style>
  @font-face { font-family: "Probe"; src: url("/probe.woff2") format("woff2"); }
  .f { font-family: "Probe", sans-serif; }
</style>
</head><body>
<p class="f">Text in a web font</p>
<img src="/a.png"><img src="/b.png"><img src="/c.png">
<div style="width:20px;height:20px;background-image:url(/bg.png)"></div>
<video src="/clip.webm" preload="auto" muted></video>
<audio src="/sound.ogg" preload="auto"></audio>
<script src="/app.js"></script>
</body></html>"""
FILES: dict[str, tuple[str, bytes]] = {
    "/": ("text/html", PAGE),
    "/style.css": ("text/css", b"body { color: rgb(1, 2, 3); }"),
    "/app.js": ("application/javascript", b"window.appRan = true;"),
    "/a.png": ("image/png", PNG),
    "/b.png": ("image/png", PNG),
    "/c.png": ("image/png", PNG),
    "/bg.png": ("image/png", PNG),
    "/probe.woff2": ("font/woff2", b"wOF2" + b"\0" * 64),
    "/clip.webm": ("video/webm", b"\x1a\x45\xdf\xa3" + b"\0" * 64),
    "/sound.ogg": ("audio/ogg", b"OggS" + b"\0" * 64),
}
KIND_OF = {
    "/a.png": "image", "/b.png": "image", "/c.png": "image", "/bg.png": "image",
    "/probe.woff2": "font", "/clip.webm": "media", "/sound.ogg": "media",
    "/style.css": "stylesheet", "/app.js": "script", "/": "document",
}  # fmt: skip


class CountingServer:
    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                with lock:
                    outer.hits[path] += 1
                found = FILES.get(path)
                if found is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                kind, body = found
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def kinds(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for path, n in self.hits.items():
            out[KIND_OF.get(path, "other")] += n
        return out


@pytest.fixture
def server() -> Iterator[CountingServer]:
    srv = CountingServer()
    srv.thread.start()
    yield srv
    srv.server.shutdown()
    srv.server.server_close()


async def _eventually(check: Any, timeout_s: float = 10.0) -> None:
    """Poll ``check()`` until true (a bound on a wait for an event, not a timing assertion)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while not check():
        if loop.time() > end:
            raise AssertionError("condition never became true")
        await asyncio.sleep(0.05)


async def _load(url: str, kinds: set[str]) -> tuple[BlockStats, dict[str, Any]]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            context = await browser.new_context()
            stats = await install_blocking(context, kinds)
            page = await context.new_page()
            response = await page.goto(url, wait_until="load")
            await page.evaluate("document.fonts.ready.then(() => true)")
            state = {
                "status": response.status if response else None,
                "title": await page.title(),
                "app_ran": await page.evaluate("window.appRan === true"),
                "color": await page.evaluate("getComputedStyle(document.body).color"),
                "images_complete": await page.evaluate(
                    "[...document.images].every(i => i.complete)"
                ),
            }
            if "media" in kinds:
                await _eventually(lambda: stats.blocked["media"] >= 2)
            await context.close()
        finally:
            await browser.close()
    return stats, state


def test_blocking_images_fonts_media(server: CountingServer) -> None:
    stats, state = asyncio.run(_load(server.url, {"image", "font", "media"}))
    assert state["status"] == 200 and state["title"] == "blocking test"
    assert state["app_ran"]  # scripts are not blocked
    assert state["color"] == "rgb(1, 2, 3)"  # nor stylesheets
    assert state["images_complete"]  # aborted images count as done: nothing hangs
    seen = server.kinds()
    assert seen["image"] == 0 and seen["font"] == 0 and seen["media"] == 0
    assert seen["document"] == 1 and seen["stylesheet"] == 1 and seen["script"] == 1
    assert (
        stats.blocked["image"] == 4 and stats.blocked["font"] == 1 and stats.blocked["media"] >= 2
    )
    assert stats.total == sum(stats.blocked.values())
    assert stats.summary().startswith("blocked 4 images, ")
    assert "1 font" in stats.summary()


def test_without_blocking_the_server_sees_everything(server: CountingServer) -> None:
    async def load_and_wait() -> BlockStats:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                context = await browser.new_context()
                stats = await install_blocking(context, [])
                page = await context.new_page()
                await page.goto(server.url, wait_until="load")
                await page.evaluate("document.fonts.ready.then(() => true)")
                await _eventually(lambda: server.kinds()["media"] >= 2)
                await context.close()
            finally:
                await browser.close()
        return stats

    stats = asyncio.run(load_and_wait())
    seen = server.kinds()
    assert seen["image"] >= 4 and seen["font"] >= 1 and seen["media"] >= 2
    assert not stats.installed and stats.total == 0 and stats.summary() == "blocked nothing"


def test_blocking_stylesheets_only(server: CountingServer) -> None:
    stats, state = asyncio.run(_load(server.url, {"stylesheet"}))
    assert state["status"] == 200 and state["app_ran"]
    assert state["color"] != "rgb(1, 2, 3)"  # the stylesheet never arrived
    seen = server.kinds()
    assert seen["stylesheet"] == 0 and seen["image"] >= 4
    assert stats.blocked == Counter({"stylesheet": 1}) and stats.summary() == "blocked 1 stylesheet"


