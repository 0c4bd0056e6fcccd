"""Signing a webhook body, and checking a signature as a receiver does.

The signature is HMAC-SHA256 with the shared secret (``BROWSERQ_WEBHOOK_SECRET``) over
``"<timestamp>.<raw body>"``, sent as ``X-Browserq-Signature: v1=<hex>`` next to
``X-Browserq-Timestamp: <unix seconds>``. Signing the timestamp with the body lets a receiver
refuse a replay: a captured request is only good within its tolerance (5 minutes by default).
"""

from __future__ import annotations

import hashlib
import hmac
import time

TIMESTAMP_HEADER = "X-Browserq-Timestamp"
SIGNATURE_HEADER = "X-Browserq-Signature"
#: How far a receiver accepts a timestamp from its own clock, by default.
DEFAULT_TOLERANCE_S = 300


class WebhookSignatureError(ValueError):
    """The request is not one browserq signed with this secret just now."""


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Browserq-Signature`` value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"v1={mac.hexdigest()}"


def verify(secret: str, body: bytes, timestamp: str | None, signature: str | None, *,
           tolerance_s: float = DEFAULT_TOLERANCE_S, now: float | None = None) -> None:
    """Raise :class:`WebhookSignatureError` unless ``signature`` signs ``body`` at ``timestamp``
    with ``secret`` and the timestamp is within ``tolerance_s`` of ``now``."""
    if not timestamp or not signature:
        raise WebhookSignatureError(f"missing {TIMESTAMP_HEADER} or {SIGNATURE_HEADER}")
    try:
        sent = int(timestamp)
    except ValueError:
        raise WebhookSignatureError(f"{TIMESTAMP_HEADER} is not a whole number of seconds") from None
    if abs((time.time() if now is None else now) - sent) > tolerance_s:
        raise WebhookSignatureError(f"the timestamp is more than {tolerance_s:g} s away: a replay, or a wrong clock")
    expected = sign(secret, sent, body)
    if not any(hmac.compare_digest(expected, given.strip()) for given in signature.split(",")):
        raise WebhookSignatureError("the signature does not match the body (tampered, or another secret)")


__all__ = ["DEFAULT_TOLERANCE_S", "SIGNATURE_HEADER", "TIMESTAMP_HEADER", "WebhookSignatureError", "sign", "verify"]
