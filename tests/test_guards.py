"""URL, domain and artifact-path guards."""

from __future__ import annotations

import os

import pytest

from browserq.errors import Codes, StepFailed
from browserq.guards import check_selector_length, check_url, safe_artifact_path, url_host_allowed

DOMAINS = ["quotes.example", "127.0.0.1", "localhost"]


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("file:///etc/passwd", "file"),
        ("javascript:alert(document.cookie)", "javascript"),
        ("JavaScript:alert(1)", "javascript"),
        ("java\tscript:alert(1)", "javascript"),  # browsers drop tabs inside URLs
        ("  javascript:alert(1)", "javascript"),
        ("data:text/html;base64,PGI+", "data"),
        ("ftp://quotes.example/x", "ftp"),
        ("chrome://settings", "chrome"),
        ("view-source:https://quotes.example/", "view-source"),
    ],
)
def test_non_http_schemes_are_denied(url, scheme) -> None:
    with pytest.raises(StepFailed) as info:
        check_url(url, [])
    assert info.value.code is Codes.URL_DENIED
    assert f"URL scheme '{scheme}:' is not allowed (only http and https are)" in info.value.message


@pytest.mark.parametrize(
    "url", ["quotes.example/page", "//quotes.example/x", "https://", "http:///path"]
)
def test_missing_scheme_or_host_is_denied(url) -> None:
    with pytest.raises(StepFailed) as info:
        check_url(url, [])
    assert info.value.code is Codes.URL_DENIED


@pytest.mark.parametrize(
    "url",
    [
        "https://quotes.example/",
        "http://QUOTES.Example:8080/page?x=1",
        "https://a.b.quotes.example/",
        "https://quotes.example./",
        "http://127.0.0.1:5000/",
        "http://localhost/",
        "https://user:pw@quotes.example/",
    ],
)
def test_allowed_hosts_pass(url) -> None:
    check_url(url, DOMAINS)


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://evilquotes.example/", "evilquotes.example"),
        ("https://quotes.example.evil.test/", "quotes.example.evil.test"),
        ("https://quotes.example@evil.test/", "evil.test"),
        ("https://evil.test\\@quotes.example/", "evil.test"),  # backslash is a slash to browsers
        ("http://127.0.0.2/", "127.0.0.2"),
        ("http://notlocalhost/", "notlocalhost"),
    ],
)
def test_lookalike_hosts_are_denied(url, host) -> None:
    with pytest.raises(StepFailed) as info:
        check_url(url, DOMAINS)
    assert info.value.code is Codes.DOMAIN_DENIED
    assert info.value.message == (
        f"host '{host}' is not in allowed_domains (quotes.example, 127.0.0.1, localhost)"
    )


def test_url_host_allowed() -> None:
    assert url_host_allowed("anything.test", [])
    assert url_host_allowed("A.Quotes.Example", ["quotes.example"])
    assert url_host_allowed("quotes.example", ["QUOTES.EXAMPLE"])
    assert url_host_allowed("x.quotes.example", ["*.quotes.example"])
    assert not url_host_allowed("evilquotes.example", ["quotes.example"])
    assert not url_host_allowed("example", ["quotes.example"])
    assert not url_host_allowed("", ["quotes.example"])


def test_safe_artifact_path_inside(tmp_path) -> None:
    assert safe_artifact_path(tmp_path, "shot.png") == (tmp_path / "shot.png").resolve()
    assert safe_artifact_path(tmp_path, "a/b/c.png") == (tmp_path / "a/b/c.png").resolve()
    assert safe_artifact_path(tmp_path, "a/./b.png") == (tmp_path / "a/b.png").resolve()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("/etc/passwd", "is absolute"),
        ("../escape.png", "contains '..'"),
        ("a/../../escape.png", "contains '..'"),
        ("C:\\x.png", "backslash"),
        ("C:x.png", "drive letter"),
        ("..\\x.png", "backslash"),
        ("", "is empty"),
        ("  ", "is empty"),
        ("a\x00.png", "NUL"),
        (".", "does not name a file"),
        ("dir/", "does not name a file"),
    ],
)
def test_safe_artifact_path_denied(tmp_path, name, message) -> None:
    with pytest.raises(StepFailed) as info:
        safe_artifact_path(tmp_path, name)
    assert info.value.code is Codes.PATH_DENIED
    assert message in info.value.message


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_safe_artifact_path_refuses_symlink_escape(tmp_path) -> None:
    base = tmp_path / "artifacts"
    outside = tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (base / "link").symlink_to(outside)
    with pytest.raises(StepFailed) as info:
        safe_artifact_path(base, "link/x.png")
    assert info.value.code is Codes.PATH_DENIED
    assert "resolves outside the artifact folder" in info.value.message


def test_check_selector_length() -> None:
    check_selector_length("a" * 10, 10)
    with pytest.raises(StepFailed) as info:
        check_selector_length("a" * 11, 10)
    assert info.value.code is Codes.INVALID_STEP_INPUT
