"""What bounding step outputs costs, and what it saves.

    .venv/bin/python bench/outputs.py [--n 30]

``eval``: Playwright's plain ``page.evaluate`` against browserq's ``evaluate_bounded`` (the
result converted to JSON and measured in the page, only then sent), interleaved, for a small
object, 1,000 records (~100 KB) and a 20 MB string (plain: the whole string crosses; bounded:
refused in the page at the 10 MiB default).
``store``: the JSON every database write serialises, ``json.dumps`` against
``browserq.recordable.dumps`` (fast path for plain data; the walk for hostile data).
Prints medians in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from browserq.actions.outputs import evaluate_bounded
from browserq.browsers.api import async_playwright
from browserq.errors import StepFailed
from browserq.recordable import dumps

CASES = {
    "small object": "({a: 1, b: 'two', c: [1, 2, 3]})",
    "1,000 records": "Array.from({length: 1000}, (_, i) => ({i, text: 'x'.repeat(80), tags: ['a', 'b']}))",
    "20 MB string": "'x'.repeat(20 * 1024 * 1024)",
}
LIMIT = 10 * 1024 * 1024


async def _time(fn, n: int) -> float:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        try:
            await fn()
        except StepFailed:
            pass
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


async def bench_eval(n: int) -> None:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = await browser.new_page()
        print(f"{'eval result':<16} {'plain ms':>10} {'bounded ms':>11}")
        for name, expression in CASES.items():
            rounds = max(3, n // 10) if "MB" in name else n
            plain = bounded = 0.0
            for _ in range(2):  # interleaved, the second round counts
                plain = await _time(lambda e=expression: page.evaluate(e), rounds)
                bounded = await _time(lambda e=expression: evaluate_bounded(page, e, LIMIT), rounds)
            print(f"{name:<16} {plain:>10.2f} {bounded:>11.2f}")
        await browser.close()


def bench_store(n: int) -> None:
    plain = {"rows": [{"i": i, "text": "x" * 80, "tags": ["a", "b"]} for i in range(50_000)]}
    hostile = {"rows": [{"i": i, "text": "x\x00" * 40, "v": float("nan")} for i in range(50_000)]}
    print(f"\n{'store JSON':<22} {'json.dumps ms':>14} {'recordable ms':>14}")
    for name, value in (("plain, 5 MB", plain), ("NUL + NaN, 5 MB", hostile)):
        base = []
        ours = []
        for _ in range(n // 3 or 1):
            start = time.perf_counter()
            json.dumps(value, default=str)
            base.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            dumps(value)
            ours.append((time.perf_counter() - start) * 1000)
        print(f"{name:<22} {statistics.median(base):>14.1f} {statistics.median(ours):>14.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(bench_eval(args.n))
    bench_store(args.n)


if __name__ == "__main__":
    main()
