"""Local stand-ins for remote things: an HTTP handler served on 127.0.0.1 in a thread, and a port
nothing listens on. Real sockets, so the browser and the workers see what they would see remotely.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
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
