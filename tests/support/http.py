"""Local stand-ins for remote things: an HTTP handler served on 127.0.0.1 in a thread, and a port
nothing listens on. Real sockets, so the browser and the workers see what they would see remotely.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def free_port() -> int:
    """A port nothing listens on (right now): for a server to start on, or a refused connection."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serve_http(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free port of 127.0.0.1 for the body; yields ``127.0.0.1:<port>``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def html_pages(
    pages: Mapping[str, str], headers: Callable[[str], Mapping[str, str]] | None = None
) -> type[BaseHTTPRequestHandler]:
    """A handler serving ``pages`` (path → HTML; the query is ignored), 404 for any other path,
    with ``headers(path)`` added to each answer; it logs nothing."""

    class Pages(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path.split("?")[0])
            data = (body or "not found").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers(self.path) if headers else {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: object) -> None:
            return None

    return Pages
