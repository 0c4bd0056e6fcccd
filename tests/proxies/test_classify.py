"""Which failures are the proxy's (or the exit IP's), and of which kind."""

from __future__ import annotations

import pytest

from browserq.browsers.api import TimeoutError as PlaywrightTimeoutError
from browserq.proxies import (
    AUTH,
    BLOCKED,
    REFUSED,
    TIMEOUT,
    TUNNEL,
    classify_error,
    classify_response,
)


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("Page.goto: net::ERR_PROXY_CONNECTION_FAILED at http://x/\nCall log: ...", REFUSED),
        ("Page.goto: net::ERR_SOCKET_NOT_CONNECTED at http://x/", REFUSED),
        ("Page.goto: net::ERR_SOCKS_CONNECTION_FAILED at http://x/", REFUSED),
        ("Page.goto: net::ERR_CONNECTION_RESET at http://x/", REFUSED),
        ("Page.goto: net::ERR_EMPTY_RESPONSE at http://x/", REFUSED),
        ("Page.goto: net::ERR_TUNNEL_CONNECTION_FAILED at https://x/", TUNNEL),
        ("net::ERR_SOCKS_CONNECTION_HOST_UNREACHABLE", TUNNEL),
        ("Page.goto: net::ERR_PROXY_AUTH_UNSUPPORTED at http://x/", AUTH),
        ("Page.goto: net::ERR_PROXY_AUTH_REQUESTED at http://x/", AUTH),
        ("Page.goto: net::ERR_INVALID_AUTH_CREDENTIALS at http://x/", AUTH),
        ("HTTP/1.1 407 Proxy Authentication Required", AUTH),
        ('Page.goto: Timeout 30000ms exceeded.\nCall log:\n  - navigating to "http://x/"', TIMEOUT),
        ("Page.goto: net::ERR_TIMED_OUT at http://x/", TIMEOUT),
        ("Page.goto: net::ERR_CONNECTION_TIMED_OUT at http://x/", TIMEOUT),
        ("Page.goto: net::ERR_NAME_NOT_RESOLVED at http://x/", None),
        ("Page.goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:4071/", None),  # 407 in a port
        ("Element is not visible", None),
        ("", None),
        (None, None),
    ],
)
def test_classify_error(message: str | None, kind: str | None) -> None:
    assert classify_error(message) == kind


def test_classify_error_takes_exceptions() -> None:
    assert classify_error(PlaywrightTimeoutError("Page.goto: Timeout 5000ms exceeded.")) == TIMEOUT
    assert classify_error(TimeoutError()) == TIMEOUT
    assert classify_error(RuntimeError("net::ERR_PROXY_CONNECTION_FAILED")) == REFUSED


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (200, "<html>hello</html>", None),
        (200, None, None),
        (None, None, None),
        (404, "not found", None),
        (502, "bad gateway", None),
        (407, "", AUTH),
        (403, "", BLOCKED),
        (429, "slow down", BLOCKED),
        (200, '<div class="g-recaptcha" data-sitekey="x">', BLOCKED),
        (200, '<div class="h-captcha">', BLOCKED),
        (503, '<form id="challenge-form" class="cf-challenge">', BLOCKED),
        (200, "<h1>Please Verify You Are Human</h1>", BLOCKED),
    ],
)
def test_classify_response(status: int | None, body: str | None, kind: str | None) -> None:
    assert classify_response(status, body) == kind
