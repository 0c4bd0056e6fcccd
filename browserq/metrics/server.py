"""The worker's HTTP endpoint: ``/metrics`` (Prometheus text) and ``/ready`` (200 or 503).

prometheus_client's own WSGI app and threading server (what ``start_http_server`` runs), with
``/ready`` in front. One per worker host process (the prefork parent): its children inherit the
listening socket at fork and close their copy (:meth:`MetricsServer.close_inherited`), so only
the parent ever answers and the port is free as soon as the parent exits.

It binds ``BROWSERQ_METRICS_HOST``, loopback unless told otherwise: an exporter on every
interface is one more open port on every host a worker runs on. A Prometheus in another container
or host needs ``0.0.0.0`` (the compose file sets it). What it serves holds no secret (no URL, run
id, credential or param; see :mod:`browserq.metrics.definitions`); keep the port off the public
internet as you would any exporter.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any, cast
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from browserq.metrics.readiness import Readiness

#: Where the endpoint listens unless BROWSERQ_METRICS_HOST says otherwise.
BIND_ADDRESS = "127.0.0.1"


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds are not worth a log line each."""


class MetricsServer:
    """Serves ``registry`` and ``readiness()`` on ``port`` in a daemon thread."""

    def __init__(self, port: int, registry: CollectorRegistry, readiness: Callable[[], Readiness],
                 address: str = BIND_ADDRESS) -> None:
        self.readiness = readiness
        metrics = make_wsgi_app(registry)

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("PATH_INFO") == "/ready":
                state = self.readiness()
                start_response("200 OK" if state.ready else "503 Service Unavailable",
                               [("Content-Type", "text/plain; charset=utf-8")])
                return [f"{state.describe()}\n".encode()]
            return metrics(environ, start_response)

        class Server(ThreadingWSGIServer):
            """ThreadingWSGIServer for ``address``'s family (``::`` is IPv6)."""

        Server.address_family = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM,
                                                   flags=socket.AI_PASSIVE)[0][0]
        self._server = make_server(address, port, app, Server, handler_class=_QuietHandler)
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        """``host:port`` it listens on."""
        host, port = cast("tuple[str, int]", self._server.server_address[:2])  # an INET(6) server
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    def start(self) -> MetricsServer:
        self._thread = threading.Thread(target=self._server.serve_forever, name="browserq-metrics",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()

    def close_inherited(self) -> None:
        """In a forked child: close this process's copy of the listening socket (the serving
        thread is the parent's; none runs here)."""
        self._server.socket.close()


__all__ = ["BIND_ADDRESS", "MetricsServer"]
