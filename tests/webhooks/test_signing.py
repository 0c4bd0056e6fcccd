"""Signatures as a receiver checks them, and the notify URLs browserq accepts."""

from __future__ import annotations

import pytest

from browserq.webhooks import WebhookSignatureError, notify_url_problem, sign, verify
from browserq.webhooks.targets import shown_url

SECRET = "whsec-0123456789"
BODY = b'{"event":"completed","run_id":"abc"}'


def test_a_signed_body_verifies_and_any_change_is_refused() -> None:
    signature = sign(SECRET, 1_700_000_000, BODY)
    assert signature.startswith("v1=") and len(signature) == 3 + 64
    verify(SECRET, BODY, "1700000000", signature, now=1_700_000_100)
    for body, stamp, sig, secret, why in [
        (BODY.replace(b"completed", b"failed"), "1700000000", signature, SECRET, "does not match"),
        (BODY, "1700000001", signature, SECRET, "does not match"),  # the timestamp is signed too
        (BODY, "1700000000", signature, "another-secret", "does not match"),
        (BODY, "1700000000", signature, SECRET, "replay"),  # checked an hour later
        (BODY, None, signature, SECRET, "missing"),
        (BODY, "soon", signature, SECRET, "whole number"),
    ]:
        now = 1_700_003_600 if why == "replay" else 1_700_000_000
        with pytest.raises(WebhookSignatureError, match=why):
            verify(secret, body, stamp, sig, now=now)


def test_several_signatures_are_accepted_while_a_secret_rotates() -> None:
    good = sign(SECRET, 1_700_000_000, BODY)
    verify(SECRET, BODY, "1700000000", f"v1={'0' * 64}, {good}", now=1_700_000_000)


@pytest.mark.parametrize(("url", "problem"), [
    ("ftp://hooks.example.com/x", "http:// or https://"),
    ("hooks.example.com/x", "http:// or https://"),
    ("https://user:pw@hooks.example.com/x", "credentials"),
    ("https://hooks.example.com/x#frag", "fragment"),
    ("https://hooks.example.com:99999/x", "not a URL"),
    ("https://hooks.example.com/a b", "spaces"),
    ("https://hooks.example.com/" + "x" * 2000, "limit is 2000"),
    (42, "URL string"),
])
def test_bad_notify_urls_are_named(url: object, problem: str) -> None:
    assert problem in (notify_url_problem(url) or "")


def test_good_notify_urls_pass_and_are_shown_without_their_path() -> None:
    assert notify_url_problem("https://hooks.example.com/services/T0/B0/secretpart?x=1") is None
    assert notify_url_problem("http://127.0.0.1:8080/hook") is None
    assert shown_url("https://hooks.example.com/services/T0/B0/secretpart") == "https://hooks.example.com/…"
    assert shown_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
