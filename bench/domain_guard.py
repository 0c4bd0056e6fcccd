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

Each way is warmed up once, then the ways are interleaved for ``--iterations``. Printed: median,
p90 and min per way in ms, and the ratio of medians to ``none``. Nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import json
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


async def _iteration(pool: BrowserPool, url: str, way: dict[str, Any]) -> float:
    started = time.perf_counter()
    context = await pool.new_context()
    try:
        page = context.pages[0] if context.pages else await context.new_page()
        blocked = await pool.domain_guard(context).protect(context, page, way["allowed"], strict=way["strict"])
        await page.goto(url, wait_until="load")
        await page.evaluate("window.done")
        if blocked.documents or blocked.subresources:
            raise RuntimeError(f"the workload must not be blocked: {blocked.as_dict()}")
    finally:
        await pool.close_context(context)
    return (time.perf_counter() - started) * 1000


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
    samples: dict[str, list[float]] = {name: [] for name in WAYS}
    try:
        loop.run(pool.start(), timeout=120)
        for way in WAYS.values():  # warm-up, not counted
            loop.run(_iteration(pool, url, way), timeout=120)
        for i in range(args.iterations):
            for name, way in WAYS.items():
                samples[name].append(loop.run(_iteration(pool, url, way), timeout=120))
            if not args.json:
                print(f"iteration {i + 1}/{args.iterations}", file=sys.stderr)
    finally:
        loop.run(pool.stop(), timeout=60)
        loop.stop()
        site.shutdown()
        cdn.shutdown()

    stats = {name: _stats(values) for name, values in samples.items()}
    base = stats["none"]["median"]
    result = {
        "iterations": args.iterations,
        "documents_per_iteration": 6,
        "subresources_per_iteration": 2 * args.images,
        "ways": stats,
        "ratio_open_to_none": stats["open"]["median"] / base,
        "ratio_strict_to_none": stats["strict"]["median"] / base,
        "samples": samples,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'way':8} {'median':>9} {'p90':>9} {'min':>9}  ratio (median / none)")
    for name, s in stats.items():
        print(f"{name:8} {s['median']:8.1f}ms {s['p90']:8.1f}ms {s['min']:8.1f}ms  {s['median'] / base:.3f}")
    print(f"{2 * args.images} subresources to another host and 6 documents per iteration, "
          f"{args.iterations} interleaved iterations")


if __name__ == "__main__":
    main()
