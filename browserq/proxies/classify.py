"""Deciding whether a failure was the proxy's (or the exit IP's) fault, and which kind.

Kinds: ``refused`` (cannot reach/talk to the proxy), ``tunnel`` (the proxy would not open a
CONNECT/SOCKS tunnel), ``auth`` (proxy credentials missing or wrong), ``blocked`` (the site
refused the exit IP: 403/429 or a challenge page) and ``timeout``.

What Chromium (Playwright 1.65) actually reports, measured against ``tests/proxies/servers.py``:

    nothing listening on the proxy port            net::ERR_PROXY_CONNECTION_FAILED   -> refused
    proxy accepts and closes at once               net::ERR_SOCKET_NOT_CONNECTED or
                                                   net::ERR_CONNECTION_RESET (timing)  -> refused
    SOCKS5 handshake rejected                      net::ERR_SOCKS_CONNECTION_FAILED   -> refused
    proxy answers CONNECT with 403 (https target)  net::ERR_TUNNEL_CONNECTION_FAILED  -> tunnel
    proxy wants auth, context has no credentials   net::ERR_INVALID_AUTH_CREDENTIALS  -> auth
    proxy rejects the credentials (http target)    the 407 page is the response       -> auth (status)
    proxy answers 403 (http target)                the 403 page is the response       -> blocked (status)
    proxy never answers                            Timeout …ms exceeded               -> timeout

``classify_error`` is meant for errors of a navigation (``page.goto``, a reload) *made through a
proxy*: a timeout while waiting for a selector is not the proxy's fault, and a reset/closed/empty
connection only points at the proxy (or its exit IP being cut off) because, with a proxy, the
browser's connection is to the proxy. Without a proxy these say nothing about proxies.
"""

from __future__ import annotations

import re

REFUSED = "refused"
TUNNEL = "tunnel"
AUTH = "auth"
BLOCKED = "blocked"
TIMEOUT = "timeout"
FAILURE_KINDS: tuple[str, ...] = (REFUSED, TUNNEL, AUTH, BLOCKED, TIMEOUT)

#: Chromium net errors, checked in this order (auth before the generic proxy failure).
ERROR_MARKERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        AUTH,
        ("ERR_PROXY_AUTH_", "ERR_INVALID_AUTH_CREDENTIALS", "407 Proxy Authentication Required"),
    ),
    (TUNNEL, ("ERR_TUNNEL_CONNECTION_FAILED", "ERR_SOCKS_CONNECTION_HOST_UNREACHABLE")),
    (
        REFUSED,
        (
            "ERR_PROXY_CONNECTION_FAILED",
            "ERR_SOCKS_CONNECTION_FAILED",
            "ERR_SOCKET_NOT_CONNECTED",
            "ERR_CONNECTION_RESET",
            "ERR_CONNECTION_CLOSED",
            "ERR_EMPTY_RESPONSE",
            "ERR_PROXY_CERTIFICATE_INVALID",
            "ERR_MANDATORY_PROXY_CONFIGURATION_FAILED",
            "ERR_NO_SUPPORTED_PROXIES",
        ),
    ),
    (TIMEOUT, ("ERR_TIMED_OUT", "ERR_CONNECTION_TIMED_OUT", "ERR_PROXY_TIMED_OUT")),
)
_PLAYWRIGHT_TIMEOUT = re.compile(r"Timeout \d+ms exceeded")

#: Challenge / block pages. Matched case-insensitively anywhere in the body snippet. Note that a
#: page that merely *embeds* a reCAPTCHA/hCaptcha widget (a contact form) also matches.
CAPTCHA_MARKERS: tuple[str, ...] = (
    "g-recaptcha",
    "h-captcha",
    "cf-challenge",
    "cf-chl-",
    "verify you are human",
    "captcha-delivery.com",
    "px-captcha",
)
BLOCKED_STATUSES = frozenset({403, 429})
MAX_SNIPPET = 200_000


def classify_error(error: BaseException | str | None) -> str | None:
    """The failure kind of a navigation error (a Playwright exception or its message), or None
    when it does not point at the proxy or the exit IP."""
    if error is None:
        return None
    message = str(error)
    for kind, markers in ERROR_MARKERS:
        if any(marker in message for marker in markers):
            return kind
    if _PLAYWRIGHT_TIMEOUT.search(message) or (
        isinstance(error, BaseException) and type(error).__name__ == "TimeoutError"
    ):
        return TIMEOUT
    return None


def classify_response(status: int | None, body_snippet: str | None = None) -> str | None:
    """The failure kind a response shows: 407 -> auth, 403/429 or a challenge page -> blocked."""
    if status == 407:
        return AUTH
    if status in BLOCKED_STATUSES:
        return BLOCKED
    if body_snippet:
        lowered = body_snippet[:MAX_SNIPPET].lower()
        if any(marker in lowered for marker in CAPTCHA_MARKERS):
            return BLOCKED
    return None
