"""One webhook POST: checked, pinned, bounded, and never raising.

- Checked and pinned: the host is resolved once, every address is checked against the
  :class:`~browserq.webhooks.egress.EgressPolicy`, and the connection goes to one of those
  addresses (the ``Host`` header and TLS name stay the URL's host): no second lookup, so DNS
  cannot answer differently between the check and the connect.
- Bounded: ``timeout_s`` is a deadline over the whole POST (lookup, connect, TLS, sending the
  body, reading the answer), not a bound per read: a receiver that answers one byte at a time
  is cut off at the deadline.
- Never raising: whatever the other end does (no answer, a reset, an answer that is not HTTP,
  TLS to a plain server) is an :class:`Answer` with a reason, so it is recorded as an attempt
  and counted against ``BROWSERQ_WEBHOOK_MAX_ATTEMPTS``.
"""

from __future__ import annotations

import http.client
import io
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from browserq.webhooks.egress import EgressPolicy, EgressRefused

RETRIED_STATUSES = frozenset({408, 409, 425, 429})
#: The most of an answer's body read (it is not used; reading a little lets the connection end cleanly).
MAX_ANSWER_BYTES = 65536


@dataclass(frozen=True)
class Answer:
    """What one POST got: a status code, or an error (no answer). ``final``: trying again
    cannot help (the egress policy refused the address)."""

    status_code: int | None
    error: str | None
    duration_ms: float
    final: bool = False

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def retriable(self) -> bool:
        code = self.status_code
        return not self.final and (code is None or code in RETRIED_STATUSES or code >= 500)


class DeadlinePassed(TimeoutError):
    """The POST as a whole took longer than its deadline."""


class _Deadline:
    """Monotonic deadline of one POST."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.at = time.monotonic() + timeout_s

    def left(self) -> float:
        remaining = self.at - time.monotonic()
        if remaining <= 0:
            raise DeadlinePassed(
                f"no answer within BROWSERQ_WEBHOOK_TIMEOUT_S ({self.timeout_s:g} s) in all"
            )
        return remaining


class _Reader(io.RawIOBase):
    """Reads from the socket with the time left until the deadline as each read's timeout."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        self._sock, self._deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(self._deadline.left())
        return self._sock.recv_into(buffer)


class _DeadlineSocket:
    """What ``http.client`` uses of a socket (sendall, makefile, close), under one deadline."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        self._sock, self._deadline = sock, deadline

    def sendall(self, data: bytes) -> None:
        self._sock.settimeout(self._deadline.left())
        self._sock.sendall(data)

    def makefile(self, mode: str = "rb", *_args: Any, **_kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_Reader(self._sock, self._deadline))

    def close(self) -> None:
        self._sock.close()


def _connect(addresses: list[tuple[int, tuple[Any, ...]]], deadline: _Deadline) -> socket.socket:
    """A connection to the first checked address that answers."""
    error: OSError = OSError("the host resolved to no address")
    for family, sockaddr in addresses:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(deadline.left())
            sock.connect(sockaddr)
            return sock
        except DeadlinePassed:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            error = exc
    raise error


def _exchange(
    url: str, body: bytes, headers: dict[str, str], policy: EgressPolicy, deadline: _Deadline
) -> int:
    """The POST itself; the answer's status code (raises on anything else)."""
    parts = urlsplit(url)
    host, secure = parts.hostname or "", parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    addresses = policy.addresses(host, port)
    deadline.left()  # a slow lookup may have spent it
    conn: http.client.HTTPConnection
    if secure:
        conn = http.client.HTTPSConnection(
            host, port, timeout=deadline.left(), context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(host, port, timeout=deadline.left())
    conn._create_connection = lambda *_a, **_k: _connect(addresses, deadline)  # type: ignore[attr-defined]  # connect()'s private hook; typeshed omits it
    try:
        conn.connect()  # TCP to a checked address, then TLS (bounded by the socket's timeout)
        conn.sock = _DeadlineSocket(conn.sock, deadline)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request("POST", target, body, headers)
        response = conn.getresponse()
        response.read(MAX_ANSWER_BYTES)
        return response.status
    finally:
        conn.close()


def _reason(exc: BaseException, deadline: _Deadline) -> str:
    """A failure as recorded: its kind and message (never the URL: its path may be a secret).
    Every socket waits at most until the deadline, so any timeout is the deadline's."""
    if isinstance(exc, TimeoutError):
        return f"timeout: no answer within BROWSERQ_WEBHOOK_TIMEOUT_S ({deadline.timeout_s:g} s) in all"
    if isinstance(exc, http.client.HTTPException):
        return f"not an HTTP answer: {type(exc).__name__}: {str(exc)[:200]!r}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed: {type(exc).__name__}: {exc}"
    return f"{type(exc).__name__}: {exc}"


def post(
    url: str, body: bytes, headers: dict[str, str], timeout_s: float, policy: EgressPolicy
) -> Answer:
    """One POST, done within ``timeout_s`` in all; never raises."""
    started = time.monotonic()
    deadline = _Deadline(timeout_s)
    code, error, final = None, None, False
    try:
        code = _exchange(url, body, headers, policy, deadline)
    except EgressRefused as exc:
        error, final = f"refused by the webhook egress policy: {exc}", True
    except Exception as exc:  # a receiver can answer anything: each failure is one recorded attempt
        error = _reason(exc, deadline)
    if code is not None and not 200 <= code < 300:
        error = f"HTTP {code} {http.client.responses.get(code, '')}".strip()
    return Answer(
        code, None if error is None else error[:300], (time.monotonic() - started) * 1000, final
    )


__all__ = ["RETRIED_STATUSES", "Answer", "DeadlinePassed", "post"]
