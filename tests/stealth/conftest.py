"""Fixtures for the stealth tests: the detector server and launch helpers.

Every browser test runs its own ``asyncio.run``: Playwright objects stay on the loop that made
them. Chromium is launched the way browserq launches it (executable, base flags, sandbox), plus
stealth's flags where a test says so.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest
from playwright.async_api import Browser

from browserq import stealth
from browserq.browsers.api import async_playwright
from browserq.browsers.display import display_for_headful
from browserq.settings import load_settings
from tests.stealth.detector import DetectorServer

T = TypeVar("T")


@pytest.fixture(scope="session")
def detector_server() -> Iterator[DetectorServer]:
    with DetectorServer() as server:
        yield server


def run(coro_fn: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(coro_fn())  # type: ignore[arg-type]


@asynccontextmanager
async def launched(*, stealth_pool: stealth.Fingerprint | bool | None = None, headless: bool = True):
    """A Chromium launched like browserq's; with ``stealth_pool`` (a pool fingerprint, or True
    for the default one) also with stealth's launch flags; ``headless=False`` on a display
    (``$DISPLAY`` or the Xvfb browserq starts)."""
    settings = load_settings()
    executable = settings.resolve_chromium()
    extra: list[str] = []
    ignore: list[str] | None = None
    if stealth_pool:
        pool = stealth_pool
        if pool is True:
            version = stealth.chrome_version_of(executable) if executable else None
            if version is None:
                pytest.skip("cannot read the Chromium version before launch")
            pool = stealth.Fingerprint.generate("pool", chrome_version=version)
        extra = stealth.launch_args(pool, headless=headless)  # type: ignore[arg-type]
        ignore = stealth.ignore_default_args()
    display = None if headless else display_for_headful()
    async with async_playwright() as pw:
        browser: Browser = await pw.chromium.launch(
            executable_path=executable,
            headless=headless,
            env={**os.environ, "DISPLAY": display} if display else None,
            args=[*settings.chromium_launch_args(), *extra],
            ignore_default_args=ignore,
            chromium_sandbox=settings.chromium_sandbox,
        )
        try:
            yield browser
        finally:
            await browser.close()


async def stealth_context(
    browser: Browser, fp: stealth.Fingerprint, host: stealth.HostInfo | None
) -> Any:
    context = await browser.new_context(**stealth.context_options(fp))
    await stealth.apply(context, fp, host=host)
    return context
