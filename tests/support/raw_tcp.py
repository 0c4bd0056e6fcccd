"""Receivers that are not well-behaved HTTP servers, served on 127.0.0.1 from a thread: one that
answers garbage, resets the connection, hangs up without a word, or answers one byte at a time
for as long as the client stays (a slow receiver). Each counts its connections and notices the
client hanging up, so a test can wait on what the other end saw."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

Behaviour = Literal["garbage", "reset", "hang_up", "dribble"]


@dataclass
class RawServer:
    port: int
    connections: int = 0
    hung_up: int = 0  # connections the client closed while this server was still answering
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, scheme: str = "http", host: str = "127.0.0.1") -> str:
        return f"{scheme}://{host}:{self.port}/hooks/browserq"

    def seen(self) -> tuple[int, int]:
        with self.lock:
            return self.connections, self.hung_up


def _read_request(conn: socket.socket) -> None:
    """Read until the end of the headers (the body, if any, is left: these servers never read it)."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = conn.recv(4096)
        if not chunk:
            return
        data += chunk


def _hang_up(conn: socket.socket) -> None:
    """End this side cleanly (FIN, not RST) and read what is left until the client closes."""
    conn.shutdown(socket.SHUT_WR)
    conn.settimeout(10)
    while conn.recv(4096):
        pass


def _answer(
    server: RawServer,
    conn: socket.socket,
    behaviour: Behaviour,
    stop: threading.Event,
    interval_s: float,
) -> None:
    try:
        if behaviour == "garbage":  # whatever came (an HTTP request, a TLS hello): not HTTP back
            conn.recv(4096)
            conn.sendall(b"SSH-2.0-OpenSSH_9.6 not http at all\r\n\r\n")
            _hang_up(conn)
            return
        _read_request(conn)
        if behaviour == "hang_up":
            _hang_up(conn)
        elif behaviour == "reset":
            conn.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )  # close = RST
        elif behaviour == "dribble":
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Pad: ")
            while not stop.wait(interval_s):
                conn.sendall(b"a")
    except OSError:
        with server.lock:
            server.hung_up += 1
    finally:
        conn.close()


@contextmanager
def raw_server(behaviour: Behaviour, *, interval_s: float = 0.5) -> Iterator[RawServer]:
    """Serve ``behaviour`` on a free port of 127.0.0.1 for the body (``dribble``: one byte every
    ``interval_s`` of a header line that never ends, until the client hangs up)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    server = RawServer(listener.getsockname()[1])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            with server.lock:
                server.connections += 1
            threading.Thread(
                target=_answer, args=(server, conn, behaviour, stop, interval_s), daemon=True
            ).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(5)
        listener.close()
