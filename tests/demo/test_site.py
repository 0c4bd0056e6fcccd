"""The demo site over plain HTTP: every group of routes answers what the templates and tests expect."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

from browserq.demo.quotes import QUOTE_PAGES, QUOTES
from browserq.demo.site import DEMO_PASSWORD, DEMO_USERNAME, SESSION_COOKIE, DemoSite


@pytest.fixture(scope="module")
def site() -> Iterator[DemoSite]:
    with DemoSite() as demo_site:
        yield demo_site


def request(
    site: DemoSite, path: str, *, form: dict[str, str] | None = None, cookie: str | None = None
) -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of one GET, or a POST of ``form``."""
    connection = http.client.HTTPConnection(site.host, site.port, timeout=10)
    try:
        headers = {"Cookie": cookie} if cookie else {}
        if form is None:
            connection.request("GET", path, headers=headers)
        else:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            connection.request("POST", path, body=urlencode(form), headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        connection.close()


def login(site: DemoSite) -> str:
    status, headers, _ = request(site, "/login", form={"username": DEMO_USERNAME, "password": DEMO_PASSWORD})
    assert status == 303 and headers["Location"] == "/account"
    return headers["Set-Cookie"].split(";")[0]


def test_quotes_routes(site: DemoSite) -> None:
    assert request(site, "/")[0] == 200
    assert QUOTES[0].text in request(site, "/quotes/")[2]
    assert request(site, f"/quotes/page/{QUOTE_PAGES}/")[0] == 200
    assert request(site, f"/quotes/page/{QUOTE_PAGES + 1}/")[0] == 404
    assert request(site, f"/quotes/tag/{QUOTES[0].tags[0]}/")[0] == 200
    assert request(site, "/quotes/tag/no-such-tag/")[0] == 404


def test_account_routes(site: DemoSite) -> None:
    status, headers, _ = request(site, "/account")
    assert status == 303 and headers["Location"] == "/login"
    assert "Invalid username or password" in request(site, "/login", form={"username": "x", "password": "y"})[2]
    cookie = login(site)
    assert cookie.startswith(f"{SESSION_COOKIE}=") and request(site, "/account", cookie=cookie)[0] == 200
    before = len(site.submissions_snapshot())
    status, _, body = request(site, "/account/contact", form={"name": "Ada", "message": "ref-42"}, cookie=cookie)
    assert status == 200 and len(site.submissions_snapshot()) == before + 1 and "Ada" in body
    assert "Please enter your name" in request(site, "/account/contact", form={"name": " "}, cookie=cookie)[2]
    assert request(site, "/account/tickets?ref=ref-42", cookie=cookie)[0] == 200
    status, headers, _ = request(site, "/logout")
    assert status == 303 and "Max-Age=0" in headers["Set-Cookie"]


@pytest.mark.parametrize("path", ["/scroll", "/widgets", "/widgets?delayed_ms=10", "/frame", "/storage", "/console-error", "/sw.js"])
def test_page_routes(site: DemoSite, path: str) -> None:
    assert request(site, path)[0] == 200


def test_fault_routes(site: DemoSite) -> None:
    assert request(site, "/slow?ms=1")[0] == 200
    assert request(site, "/slow?ms=soon")[0] == 400
    assert request(site, "/status/418")[0] == 418
    assert request(site, "/status/700")[0] == 400
    assert [request(site, "/flaky?key=t&fail=1")[0] for _ in range(2)] == [500, 200]
    assert request(site, "/flaky?fail=x")[0] == 400
    assert request(site, "/nowhere")[0] == 404
    assert site.hits("/nowhere") == 1
