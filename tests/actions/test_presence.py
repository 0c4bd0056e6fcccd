"""Presence checks (``optional``, ``until_missing``, ``while_present``): one round trip to the
page when the browser's CSS can answer, Playwright's answer otherwise, never "missing" for a
page still loading. Counted on the driver's message path, never timed."""

from __future__ import annotations

import importlib
import importlib.util
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from playwright.async_api import Page

from browserq.actions import StepContext, handler_for, locate, present
from browserq.browsers import api
from browserq.redact import Redactor
from browserq.templates import ExtractStep, TemplateSettings
from tests.support.chromium import LaunchedChromium as Chromium
from tests.support.chromium import chromium_fixture
from tests.support.http import serve_http

chromium = chromium_fixture()


@contextmanager
def driver_messages() -> Iterator[Counter[str]]:
    """Every message the Playwright client sends to its driver inside the block, by method."""
    counts: Counter[str] = Counter()
    # the chosen driver's own client (a fork is a package of its own: BROWSERQ_DRIVER)
    package = api.module.__name__.split(".")[0]
    names = (f"{package}._impl.connection", f"{package}._impl._connection")  # 1.65+, before
    Connection = next(importlib.import_module(n) for n in names if importlib.util.find_spec(n)).Connection
    # 1.65 names it send_message_to_server, the 1.64 forks _send_message_to_server: (obj, method, ...)
    attr = next(a for a in ("send_message_to_server", "_send_message_to_server") if hasattr(Connection, a))
    original = getattr(Connection, attr)

    def counted(conn: Any, obj: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        counts[f"{obj._type}.{method}"] += 1
        return original(conn, obj, method, *args, **kwargs)

    setattr(Connection, attr, counted)
    try:
        yield counts
    finally:
        setattr(Connection, attr, original)


def test_a_presence_check_on_a_loaded_page_is_one_round_trip(chromium: Chromium, demo) -> None:
    async def check(page: Page) -> list[tuple[bool, Counter[str]]]:
        await page.goto(f"{demo.url}/quotes/")
        found = []
        for selector in ("li.next a", "#nowhere"):
            with driver_messages() as counts:
                answer = await present(page, selector)
            found.append((answer, counts))
        return found

    (next_link, next_counts), (nowhere, nowhere_counts) = chromium.on_page(check)
    assert next_link is True and nowhere is False
    # Before: a load-state wait (two __waitInfo__ messages) plus a queryCount, for each check.
    assert next_counts == Counter({"Frame.evaluateExpression": 1})
    assert nowhere_counts == Counter({"Frame.evaluateExpression": 1})


SELECTORS = [
    "#status",  # native CSS, present
    "#nowhere",  # native CSS, missing (the widgets page has a shadow root: Playwright decides)
    ".shadow-text",  # only inside an open shadow root
    "shadow-box .shadow-button",  # a descendant across the shadow boundary (Playwright's CSS)
    "iframe#frame >>> #in-frame",  # into the iframe
    "iframe#frame >>> #nowhere",
    "#in-frame",  # only inside the iframe: not on the page itself
    "text=inside shadow",
    "xpath=//section",
    "xpath=//nowhere",
    "button:has-text('Shadow button')",
    "section:not(.x)",
    "role=button[name='Shadow button']",
]


@pytest.mark.parametrize("selector", SELECTORS)
def test_presence_agrees_with_playwrights_locator(chromium: Chromium, demo, selector: str) -> None:
    async def both(page: Page) -> tuple[bool, bool]:
        await page.goto(f"{demo.url}/widgets")
        await page.locator(".shadow-text").wait_for(state="attached")
        await page.frame_locator("iframe#frame").locator("#in-frame").wait_for(state="attached")
        return await present(page, selector), await locate(page, selector).count() > 0

    ours, playwrights = chromium.on_page(both)
    assert ours == playwrights


def test_a_miss_on_a_page_without_shadow_roots_stays_one_round_trip(chromium: Chromium, demo) -> None:
    async def check(page: Page) -> tuple[bool, Counter[str]]:
        await page.goto(f"{demo.url}/quotes/page/5/")  # the last page: no "next" link
        with driver_messages() as counts:
            return await present(page, "li.next a"), counts

    answer, counts = chromium.on_page(check)
    assert answer is False and counts == Counter({"Frame.evaluateExpression": 1})


class LatePage(BaseHTTPRequestHandler):
    """A document that arrives in two parts: the element asked for comes in the second, once the
    test has begun its presence check (and a while after, so the check runs while it loads)."""

    check_started = threading.Event()
    released_after_check: ClassVar[list[bool]] = []

    def do_GET(self) -> None:
        if self.path != "/":  # the favicon
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(b"<!doctype html><html><body><p>first part</p>" + b" " * 4096)
        self.wfile.flush()
        started = self.check_started.wait(10)
        time.sleep(0.5)  # not an assert: lets the check reach the page while it is still loading
        self.released_after_check.append(started)
        self.wfile.write(b'<button id="late">late</button></body></html>')

    def log_message(self, format: str, *args: Any) -> None:
        return None


def test_a_page_still_loading_is_not_judged_missing(chromium: Chromium) -> None:
    LatePage.check_started.clear()
    LatePage.released_after_check.clear()

    async def check(page: Page, url: str) -> tuple[str, bool]:
        await page.goto(url, wait_until="commit")
        state = await page.evaluate("document.readyState")
        LatePage.check_started.set()
        return state, await present(page, "#late")

    with serve_http(LatePage) as host:
        state, answer = chromium.on_page(lambda page: check(page, f"http://{host}/"))
    assert state == "loading"  # the check began on a document still being parsed
    assert LatePage.released_after_check == [True]
    assert answer is True


def _context(page: Page, tmp: Path) -> StepContext:
    async def no_artifacts(*_: Any) -> Any:
        raise AssertionError("extract stores no artifact")

    return StepContext(
        page=page,
        settings=TemplateSettings(),
        timeout_s=10,
        deadline=time.monotonic() + 60,
        redactor=Redactor(),
        save_artifact=no_artifacts,
        step_path="0",
        artifact_base=tmp,
    )


def test_an_extract_of_records_already_there_is_one_round_trip(chromium: Chromium, demo, tmp_path: Path) -> None:
    step = ExtractStep(action="extract", selector=".quote", fields={"author": ".author"}, into="q")

    async def check(page: Page) -> tuple[Any, Counter[str]]:
        await page.goto(f"{demo.url}/quotes/")
        with driver_messages() as counts:
            return await handler_for(step)(_context(page, tmp_path), step), counts

    records, counts = chromium.on_page(check)
    assert len(records) == 10 and records[0]["author"]
    # Before: a waitForSelector (attached) and then the evaluate.
    assert counts == Counter({"Frame.evalOnSelectorAll": 1})


def test_an_extract_still_waits_for_records_that_come_late(chromium: Chromium, demo, tmp_path: Path) -> None:
    step = ExtractStep(action="extract", selector="#delayed", into="late")

    async def check(page: Page) -> Any:
        await page.goto(f"{demo.url}/widgets?delayed_ms=800")
        return await handler_for(step)(_context(page, tmp_path), step)

    assert chromium.on_page(check) == ["I was late"]
