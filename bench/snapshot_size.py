"""How big a session's snapshot is, and how long it takes, on the demo site's pages.

For each page: the full snapshot and the ``interactive`` view (characters, lines, refs issued) and
the median time of ``Snapshotter.take`` (Playwright's ``aria_snapshot(mode="ai")``, finding the
iframes' frames, issuing refs, rendering) against the same page's bare ``page.aria_snapshot``.
Prints a table; asserts nothing. Usage::

    .venv/bin/python bench/snapshot_size.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from browserq.browsers.api import async_playwright
from browserq.browsers.launcher import launch_chromium
from browserq.demo.site import DemoSite
from browserq.sessions import RefBook, Snapshotter
from browserq.settings import Settings

PAGES = ("/", "/quotes/", "/login", "/widgets", "/scroll", "/account")


async def median_ms(take: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        await take()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def main(repeat: int) -> None:
    settings = Settings(artifacts_dir=Path(tempfile.mkdtemp(prefix="snapshot-bench-")))
    with DemoSite() as site:
        playwright = await async_playwright().start()
        browser, _ = await launch_chromium(playwright, settings)
        context = await browser.new_context()
        page = await context.new_page()
        await page.goto(f"{site.url}/login")
        await page.fill("#username", "demo")
        await page.fill("#password", "s3cret-pass")
        await page.click("button[type=submit]")
        book = RefBook()
        snapshots = Snapshotter(book)
        print(f"{'page':<10} {'view':<12} {'chars':>8} {'lines':>6} {'refs':>5} {'take ms':>8} {'bare ms':>8}")
        for path in PAGES:
            await page.goto(f"{site.url}{path}")
            bare = await median_ms(lambda: page.aria_snapshot(mode="ai"), repeat)
            for interactive in (False, True):
                snap = await snapshots.take(page, interactive=interactive)
                took = await median_ms(lambda i=interactive: snapshots.take(page, interactive=i), repeat)
                view = "interactive" if interactive else "full"
                print(f"{path:<10} {view:<12} {len(snap.text):>8} {snap.text.count(chr(10)) + 1:>6} "
                      f"{len(snap.refs):>5} {took:>8.1f} {bare:>8.1f}")
        await context.close()
        await browser.close()
        await playwright.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    asyncio.run(main(parser.parse_args().repeat))
