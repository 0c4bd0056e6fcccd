"""Three loopback servers for the allowed_domains tests: the allowed site, a foreign one that
counts every request it receives, and a "CDN" (a foreign host that subresources may use).

Chromium reaches them by name through ``--host-resolver-rules`` (:func:`resolver_rules`), so
lookalike hosts (``allowed.test.evil``, ``evil-allowed.test``) can be tried for real:

    allowed.test, *.allowed.test (but evil.allowed.test), partner.test   -> 127.0.0.1 (allowed site)
    foreign.test, allowed.test.evil, evil-allowed.test, evil.allowed.test -> 127.0.0.2 (counter)
    cdn.test                                                            -> 127.0.0.3 (CDN)
"""

from __future__ import annotations

import html
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

FOREIGN_HOSTS = ("foreign.test", "allowed.test.evil", "evil-allowed.test", "evil.allowed.test")
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Site:
    def __init__(self, host: str) -> None:
        self.requests: list[str] = []  # "METHOD path" of every request received, in order
        self._lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def handle_one_request(self) -> None:
                # Count before parsing: anything that reached us counts, even a malformed request.
                self.raw_requestline = self.rfile.readline(65537)
                if not self.raw_requestline:
                    self.close_connection = True
                    return
                with site._lock:
                    site.requests.append(self.raw_requestline.decode("latin-1").strip())
                if not self.parse_request():
                    return
                site.answer(self)

        self.server = _Server((host, 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> _Site:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def answer(self, h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, b"<html><body><p id='content'>FOREIGN CONTENT</p></body></html>")


def _send(h: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str = "text/html", **headers: str) -> None:
    h.send_response(status)
    for name, value in headers.items():
        h.send_header(name.replace("_", "-"), value)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    h.send_header("Access-Control-Allow-Origin", "*")
    h.end_headers()
    if h.command != "HEAD":
        h.wfile.write(body)


class ForeignSite(_Site):
    """Counts every request; answers pages with FOREIGN CONTENT and anything else with 200."""


class CdnSite(_Site):
    def answer(self, h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, PIXEL, "image/png")


class AllowedSite(_Site):
    """Pages built from the query string: ``/r302?to=URL``, ``/js?to=URL``, ``/link?to=URL``…"""

    def answer(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        to = query.get("to", "")
        attr = html.escape(to, quote=True)
        js = json.dumps(to)
        path = parts.path
        if path == "/r302":
            _send(h, 302, b"", Location=to)
            return
        if path == "/hop":  # first hop of a chain: another allowed redirect, then `to`
            _send(h, 302, b"", Location=f"/r302?to={to}")
            return
        pages = {
            "/ok": "<p id='ok'>allowed page</p>",
            "/js": f"<p id='ok'>leaving</p><script>location = {js}</script>",
            "/link": f"<a id='l' href='{attr}'>go</a>",
            "/blank": f"<a id='l' target='_blank' href='{attr}'>go</a>",
            "/open": f"<button id='l' onclick='window.open({html.escape(js)})'>go</button>",
            "/iframe": f"<p id='ok'>host page</p><iframe id='f' src='{attr}'></iframe>",
            "/frame-js": f"<p id='ok'>inner</p><script>setTimeout(() => {{ location = {js} }}, 50)</script>",
            "/image": f"<img id='img' src='{attr}'><p id='ok'>image page</p>",
            "/strict": _STRICT_PAGE.replace("__TO__", js),
            "/worker": _WORKER_PAGE.replace("__TO__", js),
        }
        body = pages.get(path, "<p id='ok'>allowed</p>")
        _send(h, 200, f"<html><head><title>allowed</title></head><body>{body}</body></html>".encode())


#: Every kind of subresource to ``to`` (an origin): image, fetch, XHR, beacon, WebSocket.
_STRICT_PAGE = """
<p id='ok'>strict page</p>
<script>
const to = __TO__;
const results = {};
const done = (k, v) => { results[k] = v; if (Object.keys(results).length === 5) {
  document.body.insertAdjacentHTML('beforeend', "<p id='done'>" + JSON.stringify(results) + "</p>"); } };
const img = new Image(); img.onload = () => done('image', 'loaded'); img.onerror = () => done('image', 'error');
img.src = to + '/pixel.png';
fetch(to + '/fetch').then(() => done('fetch', 'ok'), () => done('fetch', 'error'));
const x = new XMLHttpRequest(); x.open('GET', to + '/xhr');
x.onload = () => done('xhr', 'ok'); x.onerror = () => done('xhr', 'error'); x.send();
done('beacon', navigator.sendBeacon(to + '/beacon', 'x'));
try { const ws = new WebSocket(to.replace('http', 'ws') + '/ws');
  ws.onopen = () => done('ws', 'open'); ws.onerror = () => done('ws', 'error');
  ws.onclose = () => { if (!('ws' in results)) done('ws', 'closed'); };
} catch (e) { done('ws', 'threw'); }
</script>
"""


#: A dedicated worker fetching ``to`` (workers have no DOM and no init scripts).
_WORKER_PAGE = """
<p id='ok'>worker page</p>
<script>
const src = "fetch(" + JSON.stringify(__TO__) + ").then(() => postMessage('ok'), () => postMessage('error'))";
const w = new Worker(URL.createObjectURL(new Blob([src], {type: 'text/javascript'})));
w.onmessage = (e) => document.body.insertAdjacentHTML('beforeend', "<p id='done'>" + e.data + "</p>");
</script>
"""


class DomainSites:
    """The three servers, started together."""

    def __init__(self) -> None:
        self.allowed = AllowedSite("127.0.0.1")
        self.foreign = ForeignSite("127.0.0.2")
        self.cdn = CdnSite("127.0.0.3")

    def __enter__(self) -> DomainSites:
        for site in (self.allowed, self.foreign, self.cdn):
            site.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for site in (self.allowed, self.foreign, self.cdn):
            site.stop()

    def reset(self) -> None:
        for site in (self.allowed, self.foreign, self.cdn):
            site.reset()

    def resolver_rules(self) -> str:
        """The ``--host-resolver-rules`` value mapping the test host names to the servers."""
        rules = [f"MAP {host} 127.0.0.2" for host in FOREIGN_HOSTS]
        rules += ["MAP allowed.test 127.0.0.1", "MAP *.allowed.test 127.0.0.1", "MAP partner.test 127.0.0.1",
                  "MAP cdn.test 127.0.0.3"]
        return "--host-resolver-rules=" + ", ".join(rules)

    def url(self, host: str, path: str = "/ok") -> str:
        """``http://host:port/path`` with the port of the server ``host`` resolves to."""
        if host in FOREIGN_HOSTS:
            port = self.foreign.port
        elif host == "cdn.test":
            port = self.cdn.port
        else:
            port = self.allowed.port
        return f"http://{host}:{port}{path}"
