"""A webhook receiver the tests serve on 127.0.0.1: it checks each POST's signature as a real
receiver would (:func:`browserq.webhooks.verify`), answers with the codes a test scripts (500,
then 200…), and keeps every request it got, verified or not.

Loopback is outside the default webhook egress policy: a test that delivers here allows it as an
operator allows an internal receiver (:data:`ALLOW_LOOPBACK` for settings, :data:`ALLOW_LOOPBACK_ENV`
for a process's environment)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from browserq.webhooks import WebhookSignatureError, verify
from tests.support.http import serve_http

#: The settings (and environment) that let webhooks reach this machine's receivers.
ALLOW_LOOPBACK: dict[str, Any] = {"webhook_allowed_networks": ("127.0.0.0/8",)}
ALLOW_LOOPBACK_ENV = {"BROWSERQ_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8"}


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    verified: bool
    refusal: str | None

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str
    secret: str
    answers: list[int] = field(default_factory=list)  # codes to answer, in order; then 200
    got: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def verified(self, event: str | None = None) -> list[Received]:
        with self.lock:
            return [r for r in self.got if r.verified and (event is None or r.data["event"] == event)]


@contextmanager
def webhook_receiver(secret: str, answers: list[int] | None = None) -> Iterator[Receiver]:
    receiver = Receiver(url="", secret=secret, answers=list(answers or []))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                verify(receiver.secret, body, self.headers.get("X-Browserq-Timestamp"),
                       self.headers.get("X-Browserq-Signature"))
                verified, refusal = True, None
            except WebhookSignatureError as exc:
                verified, refusal = False, str(exc)
            with receiver.lock:
                receiver.got.append(Received(dict(self.headers), body, verified, refusal))
                code = receiver.answers.pop(0) if receiver.answers else 200
            if not verified:
                code = 401
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    with serve_http(Handler) as host:
        receiver.url = f"http://{host}/hooks/browserq"
        yield receiver
