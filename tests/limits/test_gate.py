"""The navigation gate: the rate limits apply to every document load, whatever started it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from browserq.browsers.api import Error as PlaywrightError
from browserq.browsers.api import async_playwright
from browserq.limits import RateLimiter, RateLimitTimeout, install_blocking, install_navigation_gate
from tests.limits.test_blocking import ARGS, CHROMIUM, CountingServer


@pytest.fixture
def server() -> Iterator[CountingServer]:
    srv = CountingServer()
    srv.thread.start()
    yield srv
    srv.server.shutdown()
    srv.server.server_close()


def test_every_navigation_waits_for_its_token(
    server: CountingServer, redis_url: str, prefix: str
) -> None:
    limiter = RateLimiter(redis_url, per_domain={"127.0.0.1": "2/s"}, prefix=prefix)

    async def main() -> tuple[float, int, int]:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                context = await browser.new_context()
                blocking = await install_blocking(context, {"image"})
                gate = await install_navigation_gate(
                    context, limiter, deadline=time.monotonic() + 60
                )
                page = await context.new_page()
                started = time.monotonic()
                await page.goto(server.url)
                await page.evaluate(f"location.href = {server.url + '?b'!r}")  # not a goto
                await page.wait_for_url("**/?b")
                await page.goto(server.url + "?c")
                elapsed = time.monotonic() - started
                gate.raise_if_failed()
                await context.close()
            finally:
                await browser.close()
            await limiter.aclose()
        return elapsed, gate.navigations, blocking.blocked["image"]

    elapsed, navigations, images = asyncio.run(main())
    assert navigations == 3 and server.hits["/"] == 3
    assert (
        elapsed >= 1.0 - 0.02
    )  # 3 loads at 2/s burst 1: the third no earlier than 1 s after the first
    assert images == 12 and server.kinds()["image"] == 0  # composes with install_blocking


def test_navigation_past_the_budget_fails_with_rate_limit_timeout(
    server: CountingServer, redis_url: str, prefix: str
) -> None:
    limiter = RateLimiter(redis_url, per_domain={"127.0.0.1": "1/min"}, prefix=prefix)

    async def main() -> BaseException | None:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                context = await browser.new_context()
                gate = await install_navigation_gate(
                    context, limiter, deadline=time.monotonic() + 2
                )
                page = await context.new_page()
                await page.goto(server.url)
                with pytest.raises(PlaywrightError):
                    await page.goto(server.url + "?again")
                await context.close()
            finally:
                await browser.close()
            await limiter.aclose()
        return gate.error

    error = asyncio.run(main())
    assert isinstance(error, RateLimitTimeout) and "1/min" in str(error)
    assert server.hits["/"] == 1


def test_no_rules_installs_nothing() -> None:
    async def main() -> None:
        gate = await install_navigation_gate(
            object(), RateLimiter("redis://127.0.0.1:1/0"), deadline=0
        )  # type: ignore[arg-type]
        assert gate.navigations == 0 and gate.error is None

    asyncio.run(main())
