"""The one boundary where Playwright/Chromium errors become browserq errors.

The table is checked against itself and against both of its readers (step translation and the
proxy classifier); translation is checked on what a real Chromium raises against pages, ports and
proxies served on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page

from browserq.browsers.api import Error
from browserq.browsers.errors import (
    NET_ERROR_TABLE,
    NET_ERRORS,
    BrowserLaunchFailed,
    BrowserUnusable,
    net_error_code,
    translate,
)
from browserq.errors import Codes, ConfigError, ErrorClass, InfrastructureError, StepFailed
from browserq.proxies import AUTH, FAILURE_KINDS, REFUSED, TUNNEL, classify_error, parse_proxy
from tests.proxies.servers import AuthProxy, ForbiddenProxy, RefusingProxy, TargetServer, free_port
from tests.support.chromium import LaunchedChromium, chromium_fixture

# --- the table -----------------------------------------------------------------------------------


def test_each_net_error_is_listed_once_with_a_code_and_a_known_kind() -> None:
    names = [entry.name for entry in NET_ERROR_TABLE]
    assert len(names) == len(set(names)) == len(NET_ERRORS)
    for entry in NET_ERROR_TABLE:
        assert entry.name.startswith("ERR_") and entry.meaning
        assert entry.code in (Codes.PROXY_FAILED, Codes.NAVIGATION_FAILED)
        assert entry.proxy_kind is None or entry.proxy_kind in FAILURE_KINDS
        if entry.code is Codes.PROXY_FAILED:
            assert entry.proxy_kind is not None  # a proxy failure is always some proxy kind


@pytest.mark.parametrize("entry", NET_ERROR_TABLE, ids=lambda e: e.name)
def test_translation_and_classification_read_the_same_table(entry: Any) -> None:
    error = Error(f"Page.goto: net::{entry.name} at http://127.0.0.1:9/\nCall log:\n  - navigating")
    assert translate(error, browser_connected=True).code is entry.code
    assert classify_error(error) == entry.proxy_kind
    assert classify_error(str(error)) == entry.proxy_kind


def test_an_unlisted_net_error_is_a_navigation_failure_that_blames_no_proxy() -> None:
    error = Error("Page.goto: net::ERR_SOMETHING_NEW at http://127.0.0.1:9/")
    assert net_error_code(str(error)) is Codes.NAVIGATION_FAILED
    assert translate(error, browser_connected=True).code is Codes.NAVIGATION_FAILED
    assert classify_error(error) is None


def test_the_most_telling_kind_wins_when_a_message_names_two() -> None:
    text = "net::ERR_CONNECTION_RESET, then net::ERR_PROXY_AUTH_REQUESTED"
    assert classify_error(text) == AUTH
    assert translate(Error(text), browser_connected=True).code is Codes.PROXY_FAILED


def test_browser_errors_carry_their_policy() -> None:
    unusable = BrowserUnusable("no browser")
    assert isinstance(unusable, InfrastructureError) and unusable.policy is ErrorClass.INFRASTRUCTURE
    failed = BrowserLaunchFailed("set BROWSERQ_CHROMIUM_PATH")
    assert isinstance(failed, ConfigError) and isinstance(failed, BrowserUnusable)
    assert failed.policy is ErrorClass.INFRASTRUCTURE and failed.code is Codes.BROWSER_CRASHED
    assert str(failed) == "set BROWSERQ_CHROMIUM_PATH"  # the message alone: it is what to fix


def test_what_is_not_playwright_is_internal_and_step_failures_pass_through() -> None:
    failure = StepFailed(Codes.ASSERTION_FAILED, "no")
    assert translate(failure, browser_connected=False) is failure
    internal = translate(KeyError("x"), browser_connected=True)
    assert internal.code is Codes.INTERNAL and internal.message == "KeyError: 'x'"


# --- real Chromium -------------------------------------------------------------------------------


class Chromium(LaunchedChromium):
    """browserq's Chromium, asked how an action's exception translates."""

    def failure(self, act: Any, *, proxy: dict[str, str] | None = None, **translate_options: Any) -> StepFailed:
        """Run ``act(page)`` in a fresh context; the StepFailed its exception translates to."""

        async def go() -> StepFailed:
            context = await self.browser.new_context(**({"proxy": proxy} if proxy else {}))
            page = await context.new_page()
            try:
                await act(page)
            except Exception as exc:
                return translate(exc, browser_connected=self.browser.is_connected(), **translate_options)
            finally:
                await context.close()
            raise AssertionError("the action did not fail")

        return self.run(go())


chromium = chromium_fixture(Chromium)


@pytest.fixture(scope="module")
def target() -> Iterator[TargetServer]:
    with TargetServer() as server:
        yield server


def test_a_refused_port_is_a_navigation_failure(chromium: Chromium) -> None:
    url = f"http://127.0.0.1:{free_port()}/"
    failure = chromium.failure(lambda page: page.goto(url, timeout=10_000))
    assert failure.code is Codes.NAVIGATION_FAILED
    assert "ERR_CONNECTION_REFUSED" in failure.message
    assert classify_error(failure.message) is None  # without a proxy, nobody's proxy failed


def test_a_closed_page_is_a_crashed_page(chromium: Chromium, target: TargetServer) -> None:
    async def close_then_click(page: Page) -> None:
        await page.goto(target.url("/"))
        await page.close()
        await page.click("#msg", timeout=2_000)

    assert chromium.failure(close_then_click).code is Codes.PAGE_CRASHED


def test_a_bad_selector_is_an_invalid_step_input(chromium: Chromium, target: TargetServer) -> None:
    async def click_unparsable(page: Page) -> None:
        await page.goto(target.url("/"))
        await page.click("p[[", timeout=2_000)

    async def click_ambiguous(page: Page) -> None:  # a locator is strict: two matches are an error
        await page.goto(target.url("/"))
        await page.locator("head, body").click(timeout=2_000)

    assert chromium.failure(click_unparsable).code is Codes.INVALID_STEP_INPUT
    ambiguous = chromium.failure(click_ambiguous)
    assert ambiguous.code is Codes.INVALID_STEP_INPUT and "strict mode violation" in ambiguous.message


def test_a_timeout_is_a_timeout_or_what_the_element_check_found(chromium: Chromium, target: TargetServer) -> None:
    async def click_missing(page: Page) -> None:
        await page.goto(target.url("/"))
        await page.click("#missing", timeout=300)

    timeout = chromium.failure(click_missing)
    assert timeout.code is Codes.TIMEOUT and "waiting for locator" in timeout.message
    assert chromium.failure(click_missing, element_missing=True).code is Codes.SELECTOR_NOT_FOUND
    assert chromium.failure(click_missing, element_missing=False).code is Codes.ELEMENT_NOT_ACTIONABLE


def test_a_refusing_proxy_is_the_proxys_failure(chromium: Chromium, target: TargetServer) -> None:
    with RefusingProxy() as proxy:
        options = parse_proxy(proxy.proxy_url()).playwright_options()
        failure = chromium.failure(lambda page: page.goto(target.url("/"), timeout=10_000), proxy=options)
    assert failure.code is Codes.PROXY_FAILED and "ERR_PROXY_CONNECTION_FAILED" in failure.message
    assert classify_error(failure.message) == REFUSED


def test_a_proxy_that_403s_a_tunnel_is_the_proxys_failure(chromium: Chromium, target: TargetServer) -> None:
    with ForbiddenProxy() as proxy:
        options = parse_proxy(proxy.proxy_url()).playwright_options()
        url = f"https://127.0.0.1:{target.port}/"  # https: Chromium asks the proxy for a CONNECT tunnel
        failure = chromium.failure(lambda page: page.goto(url, timeout=10_000), proxy=options)
    assert failure.code is Codes.PROXY_FAILED and "ERR_TUNNEL_CONNECTION_FAILED" in failure.message
    assert classify_error(failure.message) == TUNNEL


@pytest.mark.full_chromium  # the headless shell shows the proxy's 407 page instead (docs/browsers.md)
def test_a_proxy_wanting_credentials_the_context_lacks_is_an_auth_failure(tmp_path: Path, target: TargetServer) -> None:
    chromium = Chromium(tmp_path)
    try:
        with AuthProxy("alice", "secret") as proxy:
            options = parse_proxy(proxy.proxy_url()).playwright_options()
            failure = chromium.failure(lambda page: page.goto(target.url("/"), timeout=10_000), proxy=options)
    finally:
        chromium.close()
    assert "ERR_INVALID_AUTH_CREDENTIALS" in failure.message
    assert failure.code is Codes.NAVIGATION_FAILED  # the runner blames the proxy by its kind
    assert classify_error(failure.message) == AUTH


def test_a_disconnected_browser_is_an_infrastructure_error(tmp_path: Path, target: TargetServer) -> None:
    own = Chromium(tmp_path)
    try:
        page = own.run(own.browser.new_page())
        own.run(own.browser.close())
        with pytest.raises(Error) as caught:
            own.run(page.goto(target.url("/"), timeout=5_000))
        failure = translate(caught.value, browser_connected=own.browser.is_connected())
        assert isinstance(failure, InfrastructureError) and failure.message.startswith("browser disconnected")
    finally:
        own.run(own.playwright.stop())
        own.loop.stop()
