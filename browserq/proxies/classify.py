"""Deciding whether a failure was the proxy's (or the exit IP's) fault, and which kind.

Kinds: ``refused`` (cannot reach/talk to the proxy), ``tunnel`` (the proxy would not open a
CONNECT/SOCKS tunnel), ``auth`` (proxy credentials missing or wrong), ``blocked`` (the site
refused the exit IP: 403/429 or a challenge page) and ``timeout``.

Which Chromium net error means which kind is not decided here: the one net-error table,
:data:`browserq.browsers.errors.NET_ERROR_TABLE`, gives each ``net::ERR_*`` its proxy kind (and the
code a failed step records for it). This module adds what is not a net error: the 407 text, a
Playwright timeout, and the responses (403/429, challenge pages) that show a blocked exit IP.

``classify_error`` is meant for errors of a navigation (``page.goto``, a reload) *made through a
proxy*: a timeout while waiting for a selector is not the proxy's fault, and a reset/closed/empty
connection only points at the proxy (or its exit IP being cut off) because, with a proxy, the
browser's connection is to the proxy. Without a proxy these say nothing about proxies.
"""

from __future__ import annotations

import re

from browserq.browsers.errors import AUTH, REFUSED, TIMEOUT, TUNNEL, net_proxy_kinds

BLOCKED = "blocked"
FAILURE_KINDS: tuple[str, ...] = (REFUSED, TUNNEL, AUTH, BLOCKED, TIMEOUT)

#: Kinds a net error points at, most telling first (a message naming two takes the first).
_NET_KIND_ORDER: tuple[str, ...] = (AUTH, TUNNEL, REFUSED, TIMEOUT)
#: The proxy's 407 answer, when it reaches us as text rather than as a response.
_PROXY_AUTH_TEXT = "407 Proxy Authentication Required"
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
    kinds = net_proxy_kinds(message)
    if _PROXY_AUTH_TEXT in message:
        kinds.add(AUTH)
    for kind in _NET_KIND_ORDER:
        if kind in kinds:
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
