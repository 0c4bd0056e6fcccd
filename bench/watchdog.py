"""What the page watchdog costs a run, and how fast it ends a runaway script.

Prints medians over N trials (no assertion, no timing in tests):

* ``attach``   — opening the watchdog's CDP session on a fresh page (paid once per run);
* ``probe``    — one responsiveness probe on an idle page (paid after a step timeout, and once
  when the run ends);
* ``terminate`` — from ``Runtime.terminateExecution`` on a page stuck in ``while(true){}`` until
  the page answers again;
* ``context``  — new_context + new_page, for scale (what a run pays anyway without a spare).

    .venv/bin/python bench/watchdog.py [-n 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from browserq.browsers.launcher import launch_chromium
from browserq.runner.watchdog import PageWatchdog
from browserq.settings import load_settings


async def main(trials: int) -> None:
    from browserq.browsers.api import async_playwright

    settings = load_settings(artifacts_dir=Path(tempfile.mkdtemp()), stealth=False)
    timings: dict[str, list[float]] = {"context": [], "attach": [], "probe": [], "terminate": []}
    async with async_playwright() as playwright:
        browser, _marker = await launch_chromium(playwright, settings)
        for _ in range(trials):
            started = time.perf_counter()
            context = await browser.new_context()
            page = await context.new_page()
            timings["context"].append(time.perf_counter() - started)
            await page.goto("data:text/html,<title>t</title><p>x</p>")
            watchdog = PageWatchdog(context, page)
            started = time.perf_counter()
            await watchdog.attach()
            timings["attach"].append(time.perf_counter() - started)
            started = time.perf_counter()
            assert await watchdog.responsive()
            timings["probe"].append(time.perf_counter() - started)
            spin = asyncio.ensure_future(page.evaluate("(() => { while (true) {} })()"))
            while await watchdog.responsive(0.3):  # until the loop has started in the page
                await asyncio.sleep(0.05)
            started = time.perf_counter()
            state = await watchdog.unblock()
            timings["terminate"].append(time.perf_counter() - started)
            assert state.value == "recovered", state
            await asyncio.gather(spin, return_exceptions=True)
            await watchdog.detach()
            await context.close()
        await browser.close()
    print(f"{trials} trials, medians (ms):")
    for name, values in timings.items():
        print(f"  {name:<10} {statistics.median(values) * 1000:8.1f}   (p90 {sorted(values)[int(len(values) * 0.9) - 1] * 1000:.1f})")
    print("  terminate includes the first probe that times out (PROBE_TIMEOUT_S = 1 s) before the brake")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--trials", type=int, default=30)
    asyncio.run(main(parser.parse_args().trials))
