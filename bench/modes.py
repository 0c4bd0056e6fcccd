"""Benchmark: what headful Chromium on a virtual display costs next to headless, side by side.

Two browsers in one process, launched by browserq's own launcher with stealth on: headless, and
headful on the Xvfb browserq starts (``BROWSERQ_HEADLESS=false`` without ``DISPLAY``). Rounds are
interleaved (headless, headful, headless, ...); each round is one stealth run's browser work on
the demo site served here: a new context with an identity (``stealth.apply``), ``/quotes/``
walked through its 5 pages by clicking "Next", the 10 quotes of each page read, the context
closed. Printed per mode: median ms per round and pages/s; PSS of the browser's process tree
(and of Xvfb) sampled after every round, median and peak; CPU seconds of the tree per round.

    .venv/bin/python bench/modes.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.pop("DISPLAY", None)  # the headful browser runs on the Xvfb browserq starts

from browserq import stealth  # noqa: E402
from browserq.browsers import display  # noqa: E402
from browserq.browsers.api import async_playwright  # noqa: E402
from browserq.browsers.launcher import browser_process_tree, launch_chromium  # noqa: E402
from browserq.demo.site import DemoSite  # noqa: E402
from tests.conftest import make_settings  # noqa: E402

PAGES = 5


def _tree_stats(pids: list[int]) -> tuple[float, float]:
    """(PSS MB, CPU seconds) summed over ``pids`` (processes that exited count 0)."""
    pss_kb, ticks = 0, 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss_kb += int(line.split()[1])
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, IndexError, ValueError):
            continue
    return pss_kb / 1024, ticks / os.sysconf("SC_CLK_TCK")


async def one_round(browser: Any, host: Any, base_url: str) -> None:
    fp = stealth.Fingerprint.generate(os.urandom(8).hex(), chrome_version=host.chrome_version, host=host)
    context = await browser.new_context(**stealth.context_options(fp))
    await stealth.apply(context, fp, host=host)
    page = await stealth.new_page(context)
    await page.goto(f"{base_url}/quotes/")
    for number in range(PAGES):
        quotes = await page.locator(".quote .text").all_text_contents()
        if len(quotes) != 10:
            raise AssertionError(f"page {number + 1}: {len(quotes)} quotes")
        if number < PAGES - 1:
            await page.locator("li.next a").click()
            await page.wait_for_url(f"**/quotes/page/{number + 2}/")
    await context.close()


async def measure(rounds: int, tmp: Path) -> dict[str, dict[str, Any]]:
    modes: dict[str, dict[str, Any]] = {}
    with DemoSite() as site:
        async with async_playwright() as pw:
            for mode in ("headless", "headful"):
                settings = make_settings(tmp, headless=mode == "headless")
                browser, marker = await launch_chromium(pw, settings)
                host = await stealth.probe_host(browser)
                modes[mode] = {"browser": browser, "marker": marker, "host": host, "ms": [], "pss": [], "cpu": []}
                await one_round(browser, host, site.url)  # warm-up
            for _ in range(rounds):
                for m in modes.values():
                    pids = browser_process_tree(m["marker"])
                    _, cpu_before = _tree_stats(pids)
                    started = time.perf_counter()
                    await one_round(m["browser"], m["host"], site.url)
                    m["ms"].append((time.perf_counter() - started) * 1000)
                    pss, cpu_after = _tree_stats(browser_process_tree(m["marker"]))
                    m["pss"].append(pss)
                    m["cpu"].append(cpu_after - cpu_before)
            xvfb = display._xvfb.pid if display._xvfb else None
            modes["headful"]["xvfb_pss"] = _tree_stats([xvfb])[0] if xvfb else None
            for m in modes.values():
                await m.pop("browser").close()
    return modes


def render(modes: dict[str, dict[str, Any]], rounds: int) -> str:
    lines = [f"{rounds} interleaved rounds of {PAGES} pages each, one stealth context per round", ""]
    lines.append(f"{'mode':<9} {'median ms':>10} {'pages/s':>8} {'PSS MB med':>11} {'PSS MB max':>11} {'CPU s/round':>12}")
    for mode, m in modes.items():
        ms = statistics.median(m["ms"])
        lines.append(
            f"{mode:<9} {ms:>10.0f} {PAGES / (ms / 1000):>8.2f} {statistics.median(m['pss']):>11.0f} "
            f"{max(m['pss']):>11.0f} {statistics.median(m['cpu']):>12.2f}"
        )
    headless, headful = modes["headless"], modes["headful"]
    lines.append("")
    lines.append(
        f"headful / headless: time {statistics.median(headful['ms']) / statistics.median(headless['ms']):.2f}x, "
        f"PSS {statistics.median(headful['pss']) / statistics.median(headless['pss']):.2f}x, "
        f"CPU {statistics.median(headful['cpu']) / max(statistics.median(headless['cpu']), 1e-9):.2f}x; "
        f"Xvfb itself {headful.get('xvfb_pss') or 0:.0f} MB PSS"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        modes = asyncio.run(measure(args.rounds, Path(tmp)))
    print(render(modes, args.rounds))


if __name__ == "__main__":
    main()
