"""Small local servers for proxy tests: a target site and proxies that work, refuse, forbid or
demand credentials. Importable as ``tests.proxies.servers`` (the integration tests use them too).

Everything listens on 127.0.0.1 and only ever connects to 127.0.0.1 / localhost: a request for any
other host is answered 403 (HTTP) or "not allowed" (SOCKS5), so nothing leaves the machine.
All servers are threaded, so they work the same from sync tests and from an asyncio loop, and
every one counts what it saw (``hits`` and friends; ``reset()`` zeroes them).

    with TargetServer() as target, HttpProxy() as proxy:
        ...  # browser.new_context(proxy={"server": proxy.url}); page.goto(target.url("/"))
        assert proxy.forwarded == 1 and target.hits == 1
"""

from __future__ import annotations

import base64
import http.client
import select
import socket
import socketserver
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import quote, urlsplit

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
#: ``<link rel=icon href=data:,>`` keeps Chromium from fetching /favicon.ico (one request per load).
NO_FAVICON = '<link rel="icon" href="data:,">'
CAPTCHA_PAGE = (
    f"<html><head><title>Just a moment</title>{NO_FAVICON}</head><body>"
    '<div class="g-recaptcha" data-sitekey="x"></div><p>Please verify you are human</p></body></html>'
)


def free_port() -> int:
    """A port nothing listens on (right now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _ThreadedTCP(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False


class LocalServer:
    """Base: a threaded TCP server on 127.0.0.1 with a lock, counters and open-socket tracking."""

    scheme = "http"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: socketserver.TCPServer | None = None
        self._thread: threading.Thread | None = None
        self._open: set[socket.socket] = set()
        self.reset()

    # --- counters --------------------------------------------------------------------------
    def reset(self) -> None:
        with self._lock:
            self.hits = 0

    def _count(self, name: str, by: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + by)

    # --- lifecycle -------------------------------------------------------------------------
    def _make_server(self) -> socketserver.TCPServer:
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                with owner._lock:
                    owner._open.add(sock)
                try:
                    owner.handle_connection(sock)
                except OSError:
                    pass
                finally:
                    with owner._lock:
                        owner._open.discard(sock)

        return _ThreadedTCP(("127.0.0.1", 0), Handler)

    def handle_connection(self, sock: socket.socket) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def start(self) -> Self:
        self._server = self._make_server()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            sockets = list(self._open)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def server(self) -> str:
        """``scheme://127.0.0.1:port`` — what Playwright's ``proxy.server`` wants."""
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def proxy_url(
        self, username: str | None = None, password: str | None = None, region: str | None = None
    ) -> str:
        """A BROWSERQ_PROXIES entry for this server, optionally with credentials and a region."""
        creds = ""
        if username is not None:
            creds = quote(username, safe="")
            if password is not None:
                creds += ":" + quote(password, safe="")
            creds += "@"
        fragment = f"#region={region}" if region else ""
        return f"{self.scheme}://{creds}127.0.0.1:{self.port}{fragment}"


# --- the site behind the proxies --------------------------------------------------------------


class TargetServer:
    """The site the browser loads through a proxy. ``/`` is a page, ``/captcha`` a challenge page,
    ``/status/<code>`` answers that status. Records each request's path and proxy markers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.hits = 0
            self.requests: list[dict[str, Any]] = []

    def start(self) -> Self:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                with owner._lock:
                    owner.hits += 1
                    owner.requests.append(
                        {
                            "path": self.path,
                            "via": self.headers.get("X-Via-Test-Proxy"),
                            "proxy_authorization": self.headers.get("Proxy-Authorization"),
                        }
                    )
                status = 200
                body = f"<html><head><title>target</title>{NO_FAVICON}</head><body><p id=msg>hello from target</p></body></html>"
                if self.path.startswith("/captcha"):
                    body = CAPTCHA_PAGE
                elif self.path.startswith("/status/"):
                    status = int(self.path.split("/")[2])
                    body = f"<html><head>{NO_FAVICON}</head><body>status {status}</body></html>"
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


# --- HTTP proxies ----------------------------------------------------------------------------


def _read_head(rfile: Any) -> tuple[str, dict[str, str]] | None:
    line = rfile.readline(65537)
    if not line or not line.strip():
        return None
    headers: dict[str, str] = {}
    while True:
        raw = rfile.readline(65537)
        if raw in (b"\r\n", b"\n", b""):
            break
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return line.decode("latin-1").strip(), headers


def _respond(
    sock: socket.socket,
    status: int,
    reason: str,
    body: str = "",
    headers: dict[str, str] | None = None,
) -> None:
    data = body.encode()
    head = [
        f"HTTP/1.1 {status} {reason}",
        f"Content-Length: {len(data)}",
        "Content-Type: text/html",
        "Connection: close",
        "Proxy-Connection: close",
    ]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)


def _relay(a: socket.socket, b: socket.socket, idle_s: float = 30.0) -> None:
    """Copy bytes both ways until either side closes."""
    socks = [a, b]
    while True:
        readable, _, _ = select.select(socks, [], [], idle_s)
        if not readable:
            return
        for sock in readable:
            data = sock.recv(65536)
            if not data:
                return
            (b if sock is a else a).sendall(data)


def _is_local(host: str) -> bool:
    return host.strip("[]") in LOCAL_HOSTS


class HttpProxy(LocalServer):
    """An HTTP proxy: absolute-URI forwarding and CONNECT tunnelling, to local targets only.

    ``auth=(user, password)`` demands ``Proxy-Authorization: Basic`` (407 + ``Proxy-Authenticate``
    otherwise); ``forbid=True`` answers 403 to everything. Counters: ``hits`` (requests seen),
    ``forwarded``, ``tunnels``, ``auth_challenges`` (407s sent), ``authorized`` (requests that
    carried the right credentials), ``forbidden`` (403s sent).
    """

    def __init__(
        self, *, auth: tuple[str, str] | None = None, forbid: bool = False, name: str = "proxy"
    ) -> None:
        self.auth = auth
        self.forbid = forbid
        self.name = name
        super().__init__()

    def reset(self) -> None:
        with self._lock:
            self.hits = self.forwarded = self.tunnels = 0
            self.auth_challenges = self.authorized = self.forbidden = 0
            self.requests: list[tuple[str, str]] = []

    def _authorized(self, headers: dict[str, str]) -> bool:
        if self.auth is None:
            return True
        expected = "Basic " + base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
        return headers.get("proxy-authorization") == expected

    def handle_connection(self, sock: socket.socket) -> None:
        rfile = sock.makefile("rb")
        head = _read_head(rfile)
        if head is None:
            return
        request_line, headers = head
        method, target, _version = [*request_line.split(" "), "", ""][:3]
        with self._lock:
            self.hits += 1
            self.requests.append((method, target))
        if self.forbid:
            self._count("forbidden")
            _respond(
                sock,
                403,
                "Forbidden",
                f"<html><head>{NO_FAVICON}</head><body>proxy says no</body></html>",
            )
            return
        if not self._authorized(headers):
            self._count("auth_challenges")
            _respond(
                sock,
                407,
                "Proxy Authentication Required",
                f"<html><head>{NO_FAVICON}</head><body>proxy authentication required</body></html>",
                {"Proxy-Authenticate": 'Basic realm="browserq-test"'},
            )
            return
        if self.auth is not None:
            self._count("authorized")
        if method == "CONNECT":
            self._tunnel(sock, target)
        elif target.startswith("http://"):
            self._forward(sock, rfile, method, target, headers)
        else:
            _respond(sock, 400, "Bad Request", "not a proxy request")

    def _tunnel(self, sock: socket.socket, target: str) -> None:
        host, _, port = target.rpartition(":")
        if not _is_local(host):
            self._count("forbidden")
            _respond(sock, 403, "Forbidden", "only local targets")
            return
        try:
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=5)
        except OSError:
            _respond(sock, 502, "Bad Gateway", "target unreachable")
            return
        self._count("tunnels")
        with upstream:
            sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _relay(sock, upstream)

    def _forward(
        self, sock: socket.socket, rfile: Any, method: str, target: str, headers: dict[str, str]
    ) -> None:
        url = urlsplit(target)
        if not url.hostname or not _is_local(url.hostname):
            self._count("forbidden")
            _respond(sock, 403, "Forbidden", "only local targets")
            return
        body = rfile.read(int(headers["content-length"])) if headers.get("content-length") else None
        out = {k: v for k, v in headers.items() if k not in HOP_BY_HOP}
        out["x-via-test-proxy"] = self.name
        out["connection"] = "close"
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=10)
        try:
            conn.request(method, path, body=body, headers=out)
            response = conn.getresponse()
            data = response.read()
        except OSError:
            _respond(sock, 502, "Bad Gateway", "target unreachable")
            return
        finally:
            conn.close()
        self._count("forwarded")
        head = [f"HTTP/1.1 {response.status} {response.reason}"]
        head += [
            f"{k}: {v}"
            for k, v in response.getheaders()
            if k.lower() not in HOP_BY_HOP | {"content-length"}
        ]
        head += [f"Content-Length: {len(data)}", "Connection: close", "Proxy-Connection: close"]
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)


def ForbiddenProxy(name: str = "forbidden") -> HttpProxy:
    """A proxy that answers 403 to every request (forwarded or CONNECT)."""
    return HttpProxy(forbid=True, name=name)


def AuthProxy(username: str, password: str, name: str = "auth") -> HttpProxy:
    """A working proxy that demands Basic credentials (407 + Proxy-Authenticate otherwise)."""
    return HttpProxy(auth=(username, password), name=name)


class ClosingProxy(LocalServer):
    """Accepts a connection and closes it at once, without a byte: a proxy that is 'up' but broken."""

    def handle_connection(self, sock: socket.socket) -> None:
        self._count("hits")
        sock.close()


class RefusingProxy:
    """A proxy address with nothing listening: every connection is refused. ``hits`` stays 0."""

    scheme = "http"

    def __init__(self) -> None:
        self.hits = 0
        self.port = 0

    def start(self) -> Self:
        self.port = free_port()
        return self

    def stop(self) -> None:
        pass

    def reset(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        pass

    server = LocalServer.server
    proxy_url = LocalServer.proxy_url


# --- SOCKS5 ----------------------------------------------------------------------------------


class Socks5Proxy(LocalServer):
    """A minimal SOCKS5 proxy (RFC 1928 CONNECT; RFC 1929 user/password when ``auth`` is set),
    to local targets only. Counters: ``hits`` (handshakes), ``tunnels``, ``auth_failures``."""

    scheme = "socks5"

    def __init__(self, *, auth: tuple[str, str] | None = None) -> None:
        self.auth = auth
        super().__init__()

    def reset(self) -> None:
        with self._lock:
            self.hits = self.tunnels = self.auth_failures = self.denied = 0

    @staticmethod
    def _recv(sock: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("client closed")
            data += chunk
        return data

    def handle_connection(self, sock: socket.socket) -> None:
        version, count = self._recv(sock, 2)
        if version != 5:
            return
        methods = self._recv(sock, count)
        self._count("hits")
        wanted = 0x02 if self.auth else 0x00
        if wanted not in methods:
            if self.auth:
                self._count("auth_failures")
            sock.sendall(b"\x05\xff")
            return
        sock.sendall(bytes([5, wanted]))
        if self.auth:
            _ver, ulen = self._recv(sock, 2)
            user = self._recv(sock, ulen).decode()
            (plen,) = self._recv(sock, 1)
            password = self._recv(sock, plen).decode()
            if (user, password) != self.auth:
                self._count("auth_failures")
                sock.sendall(b"\x01\x01")
                return
            sock.sendall(b"\x01\x00")
        _ver, cmd, _rsv, atyp = self._recv(sock, 4)
        if atyp == 1:
            host = socket.inet_ntoa(self._recv(sock, 4))
        elif atyp == 3:
            (length,) = self._recv(sock, 1)
            host = self._recv(sock, length).decode()
        elif atyp == 4:
            host = socket.inet_ntop(socket.AF_INET6, self._recv(sock, 16))
        else:
            sock.sendall(b"\x05\x08\x00\x01" + b"\x00" * 6)
            return
        (port,) = struct.unpack("!H", self._recv(sock, 2))
        if cmd != 1:
            sock.sendall(b"\x05\x07\x00\x01" + b"\x00" * 6)
            return
        if not _is_local(host):
            self._count("denied")
            sock.sendall(b"\x05\x02\x00\x01" + b"\x00" * 6)
            return
        try:
            upstream = socket.create_connection((host, port), timeout=5)
        except OSError:
            sock.sendall(b"\x05\x05\x00\x01" + b"\x00" * 6)
            return
        self._count("tunnels")
        with upstream:
            sock.sendall(b"\x05\x00\x00\x01" + b"\x00" * 6)
            _relay(sock, upstream)


class HangingProxy(LocalServer):
    """Accepts connections and reads the request but never answers: a proxy that times out."""

    def reset(self) -> None:
        with self._lock:
            self.hits = 0
        self._release = threading.Event()

    def handle_connection(self, sock: socket.socket) -> None:
        self._count("hits")
        sock.recv(65536)
        self._release.wait(30)

    def stop(self) -> None:
        self._release.set()
        super().stop()
