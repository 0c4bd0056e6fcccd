"""Benchmark: a cheap session command's round trip through the queue, against the same Playwright
call made directly; and what idle sessions cost a worker process in memory.

The command is ``get`` of the page title (``s.get(what="title")``): client → the session's queue
on the broker → the worker process holding the session → ``StepAttempt`` (validation, guards,
records through the journal) → Playwright → the reply queue → client. The direct way is
``page.title()`` on an async-Playwright page of the same Chromium in this process. Both read the
demo site's ``/quotes/`` page, served here on 127.0.0.1. Reported: p50/p95/min/max per way and
the overhead (session p50 - direct p50). ``--idle N`` then opens N more idle sessions on the same
one-process worker and reports the PSS of the worker's process tree (Python, driver, Chromium)
before and after, per idle session. Prints; no asserts.

    .venv/bin/python bench/session_latency.py [--commands 200] [--idle 20] [--broker redis://127.0.0.1:6379/12]
        [--db postgresql+psycopg://postgres@127.0.0.1:5432/test] [--json]

Progress goes to stderr; with ``--json`` only the JSON goes to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

# bench/ is on sys.path when this file is run as a script: the helpers of the other benches.
from pool import descendants, pss_mb
from scrape_and_form import browserq_revision, database
from throughput import browserq_env, progress, start_worker

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    cuts = statistics.quantiles(ordered, n=20, method="inclusive") if len(ordered) > 1 else [ordered[0]] * 19
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(cuts[18], 2),
            "min_ms": round(ordered[0], 2), "max_ms": round(ordered[-1], 2), "n": len(ordered)}


async def direct(url: str, commands: int) -> list[float]:
    """``page.title()`` on a page of the same Chromium, made directly in this process."""
    from playwright.async_api import async_playwright

    from browserq.settings import get_settings

    settings = get_settings()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=settings.resolve_chromium(),
                                                   args=settings.chromium_launch_args())
        page = await (await browser.new_context()).new_page()
        await page.goto(url)
        for _ in range(10):
            await page.title()  # warm
        samples = []
        for _ in range(commands):
            start = time.perf_counter()
            await page.title()
            samples.append((time.perf_counter() - start) * 1000)
        await browser.close()
    return samples


def through_session(url: str, commands: int) -> list[float]:
    from browserq import open_session

    with open_session(settings={"trace": "off"}) as s:
        s.navigate(url=url)
        for _ in range(10):
            s.get(what="title")  # warm
        samples = []
        for _ in range(commands):
            start = time.perf_counter()
            s.get(what="title")
            samples.append((time.perf_counter() - start) * 1000)
    return samples


def tree_pss_mb(root: int) -> dict[str, float]:
    parts = {"python": 0.0, "driver": 0.0, "chromium": 0.0}
    for pid in descendants(root):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        kind = "driver" if b"playwright/driver" in cmdline else "chromium" if b"chrom" in cmdline else "python"
        parts[kind] += pss_mb(pid)
    parts["total"] = sum(parts.values())
    return {k: round(v, 1) for k, v in parts.items()}


def idle_cost(url: str, count: int, worker_pid: int) -> dict[str, Any]:
    from browserq import open_session

    before = tree_pss_mb(worker_pid)
    held = []
    try:
        for _ in range(count):
            s = open_session(settings={"trace": "off"}, idle_timeout_s=600)
            s.navigate(url=url)
            held.append(s)
        time.sleep(2)  # let the pages settle before measuring (a measurement, not a synchronization)
        after = tree_pss_mb(worker_pid)
    finally:
        for s in held:
            s.close()
    return {"sessions": count, "pss_before_mb": before, "pss_after_mb": after,
            "per_idle_session_mb": round((after["total"] - before["total"]) / max(1, count), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", type=int, default=200)
    parser.add_argument("--idle", type=int, default=20, help="idle sessions to open for the memory figure (0: none)")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/12")
    parser.add_argument("--db", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from browserq.demo.site import DemoSite

    with tempfile.TemporaryDirectory() as tmp_dir, DemoSite() as site, database(args.db, Path(tmp_dir)) as db:
        tmp = Path(tmp_dir)
        env = browserq_env(db, args.broker, f"bq_bench_sess_{uuid.uuid4().hex[:8]}", tmp / "artifacts")
        env["BROWSERQ_SESSION_MAX_PER_PROCESS"] = str(max(25, args.idle + 2))
        os.environ.update(env)  # this process is the producer: the same settings as the worker
        worker = start_worker("sessions", env, 1, "prefork", tmp)
        url = f"{site.url}/quotes/"
        try:
            progress(f"direct page.title() x {args.commands}")
            direct_ms = asyncio.run(direct(url, args.commands))
            progress(f"session get(what=title) x {args.commands} through {args.broker.split(':')[0]}")
            session_ms = through_session(url, args.commands)
            memory = idle_cost(url, args.idle, worker.proc.pid) if args.idle else None
        finally:
            worker.stop()
    result = {
        "revision": browserq_revision(), "broker": args.broker.split(":")[0],
        "direct": percentiles(direct_ms), "session": percentiles(session_ms),
        "overhead_p50_ms": round(statistics.median(session_ms) - statistics.median(direct_ms), 2),
        "idle_sessions": memory,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"revision {result['revision']}, broker {result['broker']}, {args.commands} commands each")
    for way in ("direct", "session"):
        r = result[way]
        print(f"  {way:8} p50 {r['p50_ms']:7.2f} ms  p95 {r['p95_ms']:7.2f} ms  (min {r['min_ms']}, max {r['max_ms']})")
    print(f"  overhead of the queue path at p50: {result['overhead_p50_ms']} ms")
    if memory:
        print(f"  {memory['sessions']} idle sessions: worker tree PSS {memory['pss_before_mb']['total']} MB → "
              f"{memory['pss_after_mb']['total']} MB, {memory['per_idle_session_mb']} MB per idle session")


if __name__ == "__main__":
    main()
