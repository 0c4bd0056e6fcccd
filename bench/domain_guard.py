"""What enforcing allowed_domains in the browser costs: the same page workload without the guard,
with it (``network: open``, the default), and in strict mode, interleaved in one process.

    .venv/bin/python bench/domain_guard.py [--iterations 30] [--images 100] [--json]

The workload, per iteration, in a fresh context from browserq's pool (its pre-warmed spare when
there is one): open a page on the "site" (127.0.0.1) that comes through one redirect hop, holds
3 iframes (one of them redirected too) and ``--images`` images plus as many ``fetch()`` calls to
a "CDN" on another host (127.0.0.3), and wait until every image and fetch has finished; then
close the context. So each iteration makes 6 document requests (all paused for Python when the
guard is on) and ``2 × images`` subresource requests to a host outside ``allowed_domains``
(never paused in ``open`` mode, which is the point of filtering by resource type in Chromium).

| way | guard |
|---|---|
| ``none`` | template without allowed_domains: nothing installed |
| ``open`` | ``allowed_domains: [127.0.0.1]``: documents checked in Python, subresources untouched |
| ``strict`` | ``allowed_domains: [127.0.0.1, 127.0.0.3]``, ``network: strict``: a Playwright route whose regex matches only foreign hosts (none here), so the driver checks every request and none comes to Python; the route also turns off the HTTP cache, as any route does |

Each way is warmed up once, then the ways are interleaved for ``--iterations``. Printed per way:
the median and p90 of the whole iteration, the medians of its parts — ``load`` (``goto`` until
every image and fetch is done) and ``guard`` (``protect`` + ``release``: the CDP calls that
register the context and switch ``Fetch`` on and off) — and the ratios of the medians to
``none``. Nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from browserq.browsers import BrowserPool, EventLoopThread
from browserq.settings import load_settings

PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
WAYS: dict[str, dict[str, Any]] = {
    "none": {"allowed": [], "strict": False},
    "open": {"allowed": ["127.0.0.1"], "strict": False},
    "strict": {"allowed": ["127.0.0.1", "127.0.0.3"], "strict": True},
}


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    images = 100
    cdn = ""

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, ctype: str = "text/html", **headers: str) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/start":
            return self._send(302, b"", Location="/page")
        if path == "/frame-hop":
            return self._send(302, b"", Location="/frame")
        if path == "/frame":
            return self._send(200, b"<p>frame</p>")
        if path == "/page":
            n, cdn = self.images, self.cdn
            imgs = "".join(f"<img src='{cdn}/i{i}.png'>" for i in range(n))
            frames = "<iframe src='/frame'></iframe><iframe src='/frame'></iframe><iframe src='/frame-hop'></iframe>"
            script = (
                "<script>window.done = Promise.all([...document.images].map(i => i.decode().catch(() => 0))"
                f".concat([...Array({n}).keys()].map(i => fetch('{cdn}/f' + i).then(r => r.text(), () => 0))))"
                "</script>"
            )
            return self._send(200, f"<html><body>{frames}{imgs}{script}</body></html>".encode())
        if path.endswith(".png"):
            return self._send(200, PIXEL, "image/png")
        return self._send(200, b"ok", "text/plain")


def _serve(host: str, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def _iteration(pool: BrowserPool, url: str, way: dict[str, Any]) -> dict[str, float]:
    """One iteration; times in ms: ``total``, and its parts ``guard`` (protect + release) and
    ``load`` (goto until every image and fetch finished)."""
    started = time.perf_counter()
    context = await pool.new_context()
    guard_ms = 0.0
    try:
        page = context.pages[0] if context.pages else await context.new_page()
        t0 = time.perf_counter()
        blocked = await pool.domain_guard(context).protect(context, page, way["allowed"], strict=way["strict"])
        guard_ms += (time.perf_counter() - t0) * 1000
        t1 = time.perf_counter()
        await page.goto(url, wait_until="load")
        await page.evaluate("window.done")
        load_ms = (time.perf_counter() - t1) * 1000
        if blocked.documents or blocked.subresources:
            raise RuntimeError(f"the workload must not be blocked: {blocked.as_dict()}")
    finally:
        t2 = time.perf_counter()
        await pool.domain_guard(context).release(context)
        guard_ms += (time.perf_counter() - t2) * 1000
        await pool.close_context(context)
    return {"total": (time.perf_counter() - started) * 1000, "guard": guard_ms, "load": load_ms}


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p90 = statistics.quantiles(ordered, n=10, method="inclusive")[-1] if len(ordered) > 1 else ordered[0]
    return {"median": statistics.median(ordered), "p90": p90, "min": ordered[0], "max": ordered[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--images", type=int, default=100)
    parser.add_argument("--json", action="store_true", help="JSON only on stdout")
    args = parser.parse_args()

    cdn = _serve("127.0.0.3", _Quiet)
    handler = type("Site", (_Quiet,), {"images": args.images, "cdn": f"http://127.0.0.3:{cdn.server_address[1]}"})
    site = _serve("127.0.0.1", handler)
    url = f"http://127.0.0.1:{site.server_address[1]}/start"

    tmp = Path(tempfile.mkdtemp(prefix="bench-domains-"))
    settings = load_settings(database_url=f"sqlite:///{tmp / 'b.db'}", artifacts_dir=tmp / "a", log_level="WARNING")
    loop = EventLoopThread().start()
    pool = BrowserPool(settings)
    samples: dict[str, dict[str, list[float]]] = {name: {"total": [], "guard": [], "load": []} for name in WAYS}
    try:
        loop.run(pool.start(), timeout=120)
        for way in WAYS.values():  # warm-up, not counted
            loop.run(_iteration(pool, url, way), timeout=120)
        for i in range(args.iterations):
            for name, way in WAYS.items():
                for part, value in loop.run(_iteration(pool, url, way), timeout=120).items():
                    samples[name][part].append(value)
            if not args.json:
                print(f"iteration {i + 1}/{args.iterations}", file=sys.stderr)
    finally:
        loop.run(pool.stop(), timeout=60)
        loop.stop()
        site.shutdown()
        cdn.shutdown()

    stats = {name: {part: _stats(v) for part, v in parts.items()} for name, parts in samples.items()}
    base = stats["none"]["total"]["median"]
    result = {
        "iterations": args.iterations,
        "documents_per_iteration": 6,
        "subresources_per_iteration": 2 * args.images,
        "ways": stats,
        "ratio_open_to_none": stats["open"]["total"]["median"] / base,
        "ratio_strict_to_none": stats["strict"]["total"]["median"] / base,
        "load_ratio_open_to_none": stats["open"]["load"]["median"] / stats["none"]["load"]["median"],
        "load_ratio_strict_to_none": stats["strict"]["load"]["median"] / stats["none"]["load"]["median"],
        "samples": samples,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'way':8} {'total median':>13} {'p90':>9} {'load median':>12} {'guard median':>13}  ratio total / load (to none)")
    for name, s in stats.items():
        total, load = s["total"], s["load"]
        print(
            f"{name:8} {total['median']:11.1f}ms {total['p90']:7.1f}ms {load['median']:10.1f}ms "
            f"{s['guard']['median']:11.1f}ms  {total['median'] / base:.3f} / "
            f"{load['median'] / stats['none']['load']['median']:.3f}"
        )
    print(f"{2 * args.images} subresources to another host and 6 documents per iteration, "
          f"{args.iterations} interleaved iterations; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
