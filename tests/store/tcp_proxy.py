"""A tiny TCP fault proxy for outage tests. It forwards to a server until told to fail in one of
the ways real networks fail, then heals on the same port:

- ``cut()``: every connection reset, new ones refused (a server that went away);
- ``swallow()``: the connections open now stay open but carry nothing, either way, with no FIN
  and no RST (a NAT or load balancer that lost its state, a frozen host); new connections work;
- ``blackhole()``: like ``swallow`` and new connections are accepted but carry nothing either
  (a host that stopped answering while its TCP stack lives on) until ``heal()``.

A swallowed connection stays swallowed after ``heal()``, as the lost flow of a real NAT does:
only a client that notices and reconnects gets through again.
"""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._lock = threading.Lock()
        self._pairs: set[socket.socket] = set()
        self._swallowed: set[socket.socket] = set()
        self._blackholing = False
        self._listener: socket.socket | None = None
        self._accepting = threading.Event()
        self.connections = 0  # accepted so far
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port: int = probe.getsockname()[1]
        probe.close()

    # --- control ---------------------------------------------------------------------------
    def start(self) -> TcpProxy:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self._listener = listener
        self._accepting.set()
        threading.Thread(target=self._accept_loop, args=(listener,), daemon=True).start()
        return self

    def cut(self) -> None:
        """Kill every proxied connection and refuse new ones (the port is closed)."""
        self._accepting.clear()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            sockets, self._pairs = list(self._pairs), set()
            self._swallowed.clear()
        for sock in sockets:
            _kill(sock)

    def restore(self) -> None:
        self.start()

    def swallow(self) -> int:
        """Make every connection open now carry nothing from here on (both ways, no FIN/RST);
        returns how many connections were swallowed. New connections are forwarded as usual."""
        with self._lock:
            self._swallowed.update(self._pairs)
            return len(self._pairs) // 2

    def blackhole(self) -> None:
        """Swallow the open connections and every new one until ``heal()``."""
        with self._lock:
            self._blackholing = True
            self._swallowed.update(self._pairs)

    def heal(self) -> None:
        """New connections are forwarded again; the swallowed ones stay swallowed."""
        with self._lock:
            self._blackholing = False

    def open_connections(self) -> int:
        """Client connections open through the proxy now (swallowed ones included)."""
        with self._lock:
            return len(self._pairs) // 2

    def stop(self) -> None:
        self.cut()

    # --- forwarding ------------------------------------------------------------------------
    def _accept_loop(self, listener: socket.socket) -> None:
        while self._accepting.is_set() and self._listener is listener:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                if not self._accepting.is_set():
                    client.close()
                    upstream.close()
                    return
                self._pairs.update((client, upstream))
                if self._blackholing:
                    self._swallowed.update((client, upstream))
                self.connections += 1
            threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if src in self._swallowed:
                    continue  # read and dropped: the peer sees an open connection, silent
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _kill(src)
            _kill(dst)
            with self._lock:
                self._pairs.discard(src)
                self._pairs.discard(dst)
                self._swallowed.discard(src)
                self._swallowed.discard(dst)


def _kill(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
