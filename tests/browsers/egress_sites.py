"""The egress test bed: an allowed site, and a foreign host that counts everything it receives.

* the allowed site (127.0.0.1) serves one page per egress path, ``/p/NAME``: the page tries that
  path towards the foreign host and resolves ``window.__egress`` once its attempt has settled;
* the foreign host (127.0.0.2) is a TCP server that counts every *connection* (a preconnect, a
  TURN-over-TCP allocate and a WebSocket count, not only HTTP requests) and every request line, and
  a UDP socket that counts every datagram (STUN, TURN over UDP, QUIC for WebTransport).

IP hosts on purpose: 127.0.0.x origins are secure contexts (service workers, WebTransport and
speculation rules need one) and no DNS is involved (``dns-prefetch`` can only show up as a
connection, which is what is counted).
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

ALLOWED_HOST = "127.0.0.1"
FOREIGN_HOST = "127.0.0.2"

PDF = (
    b"%PDF-1.1\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 100 100]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], handler: Any, counter: ForeignCounter | None = None
    ) -> None:
        self.counter = counter
        super().__init__(address, handler)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        if self.counter is not None:  # every accepted connection counts, HTTP or not
            self.counter.connection()
        return True


class ForeignCounter:
    """What reached the foreign host: TCP connections, HTTP request lines, UDP datagrams."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.connections = 0
        self.requests: list[str] = []
        self.datagrams = 0

    def connection(self) -> None:
        with self._lock:
            self.connections += 1

    def request(self, line: str) -> None:
        with self._lock:
            self.requests.append(line)

    def datagram(self) -> None:
        with self._lock:
            self.datagrams += 1

    def reset(self) -> None:
        with self._lock:
            self.connections, self.requests, self.datagrams = 0, [], 0

    def seen(self) -> dict[str, Any]:
        with self._lock:
            return {
                "connections": self.connections,
                "requests": list(self.requests),
                "datagrams": self.datagrams,
            }

    @property
    def anything(self) -> bool:
        with self._lock:
            return bool(self.connections or self.requests or self.datagrams)


def _send(
    h: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str, headers: dict[str, str]
) -> None:
    h.send_response(status)
    for name, value in headers.items():
        h.send_header(name, value)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    h.send_header("Access-Control-Allow-Origin", "*")
    h.end_headers()
    if h.command != "HEAD":
        h.wfile.write(body)


@dataclass
class Page:
    """One egress path: the page body (placeholders filled in), its headers, and how it is driven."""

    body: str
    headers: dict[str, str] | None = None
    click: bool = False  # the attempt needs a user gesture: the test clicks #go
    early_hints: str | None = None  # a Link header sent in a 103 before the page


class EgressSites:
    """The allowed site and the foreign counter, started together (one port each, picked free)."""

    def __init__(self, pages: dict[str, Page]) -> None:
        self.pages = pages
        self.foreign = ForeignCounter()
        self.allowed_requests: list[str] = []
        sites = self

        class Foreign(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def handle_one_request(self) -> None:
                self.raw_requestline = self.rfile.readline(65537)
                if not self.raw_requestline:
                    self.close_connection = True
                    return
                sites.foreign.request(self.raw_requestline.decode("latin-1").strip())
                if self.parse_request():
                    _send(self, 200, b"<p>FOREIGN</p>", "text/html", {})

        class Allowed(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                sites.allowed_requests.append(self.path)
                sites.answer(self)

            do_POST = do_GET

        self._tcp = _Server((FOREIGN_HOST, 0), Foreign, self.foreign)
        self._allowed = _Server((ALLOWED_HOST, 0), Allowed)
        self._udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._udp.bind((FOREIGN_HOST, 0))
        self.tcp_port = self._tcp.server_address[1]
        self.udp_port = self._udp.getsockname()[1]
        self.allowed_port = self._allowed.server_address[1]
        self._threads = [
            threading.Thread(target=self._tcp.serve_forever, daemon=True),
            threading.Thread(target=self._allowed.serve_forever, daemon=True),
            threading.Thread(target=self._count_datagrams, daemon=True),
        ]

    def _count_datagrams(self) -> None:
        while True:
            try:
                self._udp.recvfrom(65536)
            except OSError:  # closed
                return
            self.foreign.datagram()

    def __enter__(self) -> EgressSites:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in (self._tcp, self._allowed):
            server.shutdown()
            server.server_close()
        self._udp.close()

    @property
    def foreign_origin(self) -> str:
        return f"http://{FOREIGN_HOST}:{self.tcp_port}"

    @property
    def allowed_origin(self) -> str:
        return f"http://{ALLOWED_HOST}:{self.allowed_port}"

    def fill(self, text: str) -> str:
        return (
            text.replace("__F__", self.foreign_origin)
            .replace("__FWS__", self.foreign_origin.replace("http", "ws"))
            .replace("__FH__", FOREIGN_HOST)
            .replace("__TP__", str(self.tcp_port))
            .replace("__UP__", str(self.udp_port))
            .replace("__A__", self.allowed_origin)
        )

    def answer(self, h: BaseHTTPRequestHandler) -> None:
        path = urlsplit(h.path).path
        if path.startswith("/p/") and path[3:] in self.pages:
            page = self.pages[path[3:]]
            if page.early_hints:
                h.send_response_only(103)
                h.send_header("Link", self.fill(page.early_hints))
                h.end_headers()
            headers = {k: self.fill(v) for k, v in (page.headers or {}).items()}
            html = f"<!doctype html><html><head><title>egress</title>{_HELPER}</head><body>{self.fill(page.body)}</body></html>"
            _send(h, 200, html.encode(), "text/html", headers)
        elif path.endswith(".js"):  # worker scripts: /w/NAME.js is the page's `worker` text
            name = path.rsplit("/", 1)[1][:-3]
            source = self.fill(_WORKER_SCRIPTS.get(name, ""))
            _send(h, 200, source.encode(), "text/javascript", {})
        elif path == "/rules.json":
            rules = {
                "prefetch": [{"source": "list", "urls": [self.foreign_origin + "/spec-header"]}]
            }
            _send(h, 200, json.dumps(rules).encode(), "application/speculationrules+json", {})
        elif path.endswith(".pdf"):
            _send(h, 200, PDF, "application/pdf", {})
        else:
            _send(h, 200, b"<p>allowed</p>", "text/html", {})


#: Every page defines ``settle(promise)``: ``window.__egress`` resolves (to a short text) once the
#: attempt has gone as far as it can; ``later(ms)`` gives a fire-and-forget attempt a moment.
_HELPER = """<script>
window.__egress = new Promise((resolve) => { window.settle = (p) => Promise.resolve(p).then(
  (v) => resolve(String(v)), (e) => resolve('error: ' + (e && e.name))); });
window.later = (ms, v) => new Promise((r) => setTimeout(() => r(v === undefined ? 'sent' : v), ms));
</script>"""

#: Scripts the allowed site serves as /w/NAME.js (shared and service workers need a URL).
_WORKER_SCRIPTS: dict[str, str] = {
    "shared": "onconnect = (e) => { const port = e.ports[0]; fetch('__F__/shared-worker-fetch')"
    ".then(() => port.postMessage('ok'), () => port.postMessage('error')); };",
    "wt": "try { const t = new WebTransport('https://__FH__:__UP__/wt-url-worker');"
    " t.ready.then(() => postMessage('ready'), () => postMessage('error')); } catch (e) { postMessage('threw') }",
    "service": "self.addEventListener('install', (e) => e.waitUntil(fetch('__F__/service-worker-fetch')"
    ".then(() => 0, () => 0))); self.addEventListener('activate', (e) => e.waitUntil(clients.claim()));",
}
