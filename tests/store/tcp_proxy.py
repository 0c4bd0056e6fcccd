"""A tiny TCP proxy for outage tests: forwards to a server until told to cut every connection
and refuse new ones, then resumes on the same port."""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._lock = threading.Lock()
        self._pairs: set[socket.socket] = set()
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
        for sock in sockets:
            _kill(sock)

    def restore(self) -> None:
        self.start()

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
                self.connections += 1
            threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _kill(src)
            _kill(dst)
            with self._lock:
                self._pairs.discard(src)
                self._pairs.discard(dst)


def _kill(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
