"""Browser-pool benchmarks: context acquisition (pre-warmed vs on demand) and worker RSS over runs.

    .venv/bin/python bench/pool.py acquire [--n 40]
    .venv/bin/python bench/pool.py rss [--runs 1000] [--every 50]
    .venv/bin/python bench/pool.py slots [--slots 2,4] [--jobs 20] [--db URL] [--broker URL]

``acquire`` times ``BrowserPool.new_context()`` plus getting its page, with a spare waiting (the pool refills it in
the background while a "run" uses its context) and with no spares, interleaved in one process.
``rss`` runs a small template (open a page, extract 10 records) N times through the real
runtime (SQLite store) and samples the memory (PSS, so shared pages count once) of the whole
worker — this Python process, the Playwright driver and every Chromium process — by part,
printing whether it stays flat.
``slots`` compares the two ways of running K runs at once, at equal concurrency K: a prefork
``browserq worker --concurrency K`` (K processes, K Chromiums) and ``--pool threads --concurrency K``
(one process, one Chromium, K contexts). Each worker runs the throughput workload (``--jobs`` runs
of ``quotes``, 5 pages each, through ``.delay()`` on Redis, PostgreSQL store) after a warm-up of 2K
runs, while the PSS of its whole process tree (Celery, every child, drivers, every Chromium
process) is sampled every 0.25 s. It prints pages/s, the median and peak PSS of the tree and PSS
per slot (median / K). One worker at a time; prefork and threads alternate per K.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from browserq.browsers import BrowserPool, EventLoopThread
from browserq.browsers.launcher import rss_bytes
from browserq.demo.site import DemoSite
from browserq.execute.runtime import Runtime
from browserq.settings import load_settings
from browserq.templates import load_template_text

console = Console()

TEMPLATE = """
name: bench_small
version: 1.0.0
params:
  url: {type: url, required: true}
settings: {trace: off}
steps:
  - {action: navigate, url: "${url}"}
  - {action: extract, selector: ".quote", fields: {text: ".text", author: ".author"}, into: quotes}
"""


def process_children() -> dict[int, list[int]]:
    """pid → the pids of its children, for every live process (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def descendants(root: int) -> list[int]:
    """``root`` and every process below it (Linux /proc)."""
    children = process_children()
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def pss_mb(pid: int) -> float:
    """Proportional set size: shared pages split between the processes sharing them, so a
    process tree's total is not inflated the way summed RSS is (Chromium shares a lot)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return rss_bytes([pid]) / 2**20


def worker_memory_mb() -> dict[str, float]:
    """This worker's memory by part: Python, the Playwright driver, Chromium (all processes)."""
    me = os.getpid()
    parts = {"python": pss_mb(me), "driver": 0.0, "chromium": 0.0}
    for pid in descendants(me)[1:]:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        parts["driver" if b"playwright/driver" in cmdline else "chromium"] += pss_mb(pid)
    parts["total"] = sum(parts.values())
    return parts


def bench_acquire(n: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="bq-bench-"))
    loop = EventLoopThread().start()
    results: dict[str, list[float]] = {"prewarmed": [], "on_demand": []}
    pools = {
        "prewarmed": BrowserPool(load_settings(artifacts_dir=tmp, context_prewarm=1)),
        "on_demand": BrowserPool(load_settings(artifacts_dir=tmp, context_prewarm=0)),
    }
    try:
        for pool in pools.values():
            loop.run(pool.start(), timeout=60)

        async def one(pool: BrowserPool) -> float:
            started = time.perf_counter()
            context = await pool.new_context()
            page = context.pages[0] if context.pages else await context.new_page()
            elapsed = (time.perf_counter() - started) * 1000  # a context with its page, ready
            await page.goto("about:blank")
            await asyncio.sleep(0.3)
            await pool.close_context(context)
            return elapsed

        for _ in range(2):  # warm-up
            for pool in pools.values():
                loop.run(one(pool))
        for _ in range(n):
            for name, pool in pools.items():
                results[name].append(loop.run(one(pool)))
        hits = pools["prewarmed"].spare_hits
    finally:
        for pool in pools.values():
            loop.run(pool.stop(), timeout=60)
        loop.stop()
    summary = {
        name: {"median_ms": statistics.median(v), "p90_ms": sorted(v)[int(len(v) * 0.9) - 1]}
        for name, v in results.items()
    }
    summary["ratio_on_demand_over_prewarmed"] = summary["on_demand"]["median_ms"] / max(
        summary["prewarmed"]["median_ms"], 1e-6
    )
    summary["spare_hits"] = hits
    summary["n"] = n
    table = Table(title=f"context acquisition, {n} each, interleaved")
    for column in ("pool", "median ms", "p90 ms"):
        table.add_column(column, justify="right")
    for name in ("prewarmed", "on_demand"):
        table.add_row(name, f"{summary[name]['median_ms']:.2f}", f"{summary[name]['p90_ms']:.2f}")
    console.print(table)
    console.print(f"on-demand / pre-warmed (median): {summary['ratio_on_demand_over_prewarmed']:.1f}x"
                  f"   (spare hits {hits}/{n + 2})")
    return summary


def bench_rss(runs: int, every: int, max_contexts: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="bq-bench-"))
    settings = load_settings(
        database_url=f"sqlite:///{tmp / 'bench.db'}", artifacts_dir=tmp / "artifacts",
        browser_max_contexts=max_contexts,
    )
    loaded = load_template_text(TEMPLATE)
    samples: list[tuple[int, dict[str, float], int]] = []
    with DemoSite() as site, Runtime(settings) as runtime:
        url = f"{site.url}/quotes/"
        started = time.perf_counter()
        for i in range(runs + 1):
            if i % every == 0:
                memory = worker_memory_mb()
                samples.append((i, memory, runtime.pool.launches))
                console.print(
                    f"  run {i:5d}  worker PSS {memory['total']:7.1f} MB  (python {memory['python']:6.1f}, "
                    f"driver {memory['driver']:6.1f}, chromium {memory['chromium']:7.1f})  "
                    f"browsers launched {runtime.pool.launches}", highlight=False)
            if i < runs:
                outcome = runtime.run_loaded(loaded, {"url": url})
                assert outcome.status == "completed", outcome
        elapsed = time.perf_counter() - started
        recycles = runtime.pool.recycles
    values = [s[1]["total"] for s in samples]
    python = [s[1]["python"] for s in samples]
    quarter = max(1, len(values) // 4)
    first, last = statistics.median(values[1 : 1 + quarter]), statistics.median(values[-quarter:])
    py_first, py_last = statistics.median(python[1 : 1 + quarter]), statistics.median(python[-quarter:])
    summary = {
        "python_pss_mb_first_quarter_median": py_first,
        "python_pss_mb_last_quarter_median": py_last,
        "runs": runs,
        "seconds": elapsed,
        "runs_per_s": runs / elapsed,
        "rss_mb_min": min(values),
        "rss_mb_max": max(values),
        "rss_mb_first_quarter_median": first,
        "rss_mb_last_quarter_median": last,
        "growth_ratio_last_over_first": last / first,
        "browser_recycles": recycles,
        "browser_max_contexts": max_contexts,
        "samples": samples,
    }
    console.print(
        f"python alone: {py_first:.0f} MB → {py_last:.0f} MB (x{py_last / py_first:.2f})\n"
        f"worker PSS over {runs} runs: min {min(values):.0f} MB, max {max(values):.0f} MB; "
        f"median of first quarter {first:.0f} MB → last quarter {last:.0f} MB "
        f"(x{last / first:.2f}); {recycles} browser recycles; {runs / elapsed:.1f} runs/s"
    )
    return summary


def is_chromium_root(pid: int) -> bool:
    """A Chromium browser process (not a renderer, zygote or other helper: those have ``--type=``)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"chrom" in cmdline.split(b"\0")[0] and b"--type=" not in cmdline


def tree_pss_mb(root: int) -> float:
    return sum(pss_mb(pid) for pid in descendants(root))


def slots_way(mode: str, k: int, jobs: int, env: dict[str, str], url: str, tmp: Path) -> dict:
    """One worker (``mode`` prefork or threads, concurrency ``k``): warm-up, then the timed
    workload with the worker tree's PSS sampled in a thread."""
    import threading

    from throughput import PAGES_PER_JOB, RESULT_TIMEOUT_S, start_worker, submit_and_wait

    queue = f"{env['BROWSERQ_QUEUE']}_{mode}{k}"
    worker = start_worker(f"{mode}{k}", {**env, "BROWSERQ_QUEUE": queue}, k, mode, tmp)
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.25):
            samples.append(tree_pss_mb(worker.proc.pid))

    try:
        submit_and_wait(url, 2 * k, queue, RESULT_TIMEOUT_S)
        idle = tree_pss_mb(worker.proc.pid)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.perf_counter()
        pages = submit_and_wait(url, jobs, queue, RESULT_TIMEOUT_S)
        elapsed = time.perf_counter() - started
        stop.set()
        sampler.join()
        roots = [pid for pid in descendants(worker.proc.pid) if is_chromium_root(pid)]
    finally:
        stop.set()
        worker.stop()
    assert pages == jobs * PAGES_PER_JOB
    median = statistics.median(samples)
    return {"mode": mode, "slots": k, "pages_per_s": pages / elapsed, "seconds": elapsed,
            "pss_mb_idle_after_warmup": idle, "pss_mb_median": median, "pss_mb_peak": max(samples),
            "pss_mb_per_slot": median / k, "samples": len(samples), "chromium_roots": len(roots),
            "load_average_1m": os.getloadavg()[0]}


def bench_slots(slots: list[int], jobs: int, db: str, broker: str) -> dict:
    import uuid

    from scrape_and_form import database
    from throughput import browserq_env

    tmp = Path(tempfile.mkdtemp(prefix="bq-bench-slots-"))
    results: list[dict] = []
    with DemoSite() as site, database(db, tmp) as db_url:
        env = browserq_env(db_url, broker, f"bq_slots_{uuid.uuid4().hex[:8]}", tmp / "artifacts")
        os.environ.update(env)  # this process is the producer, with the workers' settings
        from browserq import celery_app
        from browserq.settings import reset_settings_cache

        reset_settings_cache()
        celery_app.reset_producer_cache()
        for k in slots:
            for mode in ("prefork", "threads"):
                one = slots_way(mode, k, jobs, env, f"{site.url}/quotes/", tmp)
                results.append(one)
                console.print(f"  K={k} {mode:<8} {one['pages_per_s']:5.2f} pages/s  worker tree PSS median "
                              f"{one['pss_mb_median']:7.1f} MB (peak {one['pss_mb_peak']:7.1f}, idle "
                              f"{one['pss_mb_idle_after_warmup']:7.1f})  per slot {one['pss_mb_per_slot']:6.1f} MB"
                              f"  Chromiums {one['chromium_roots']}  load {one['load_average_1m']:.1f}",
                              highlight=False)
    table = Table(title=f"K runs at once: prefork (K processes) vs --pool threads (1 process), {jobs} runs each")
    for column in ("K", "mode", "pages/s", "PSS median MB", "PSS per slot MB", "Chromiums"):
        table.add_column(column, justify="right")
    for one in results:
        table.add_row(str(one["slots"]), one["mode"], f"{one['pages_per_s']:.2f}", f"{one['pss_mb_median']:.0f}",
                      f"{one['pss_mb_per_slot']:.0f}", str(one["chromium_roots"]))
    console.print(table)
    for k in slots:
        pre, thr = (next(r for r in results if r["slots"] == k and r["mode"] == m) for m in ("prefork", "threads"))
        console.print(f"K={k}: threads/prefork pages/s {thr['pages_per_s'] / pre['pages_per_s']:.2f}, "
                      f"PSS per slot {thr['pss_mb_per_slot'] / pre['pss_mb_per_slot']:.2f}")
    return {"jobs": jobs, "results": results}


def quiet_logs() -> None:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))


def main() -> None:
    quiet_logs()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["acquire", "rss", "slots", "all"])
    parser.add_argument("--n", type=int, default=40, help="acquisitions per pool (acquire)")
    parser.add_argument("--runs", type=int, default=1000, help="runs (rss)")
    parser.add_argument("--every", type=int, default=50, help="sample RSS every this many runs")
    parser.add_argument("--max-contexts", type=int, default=250, help="browser_max_contexts (rss)")
    parser.add_argument("--slots", default="2,4", help="concurrencies K to compare (slots)")
    parser.add_argument("--jobs", type=int, default=20, help="timed runs per worker (slots)")
    parser.add_argument("--db", default="postgresql+psycopg://postgres@127.0.0.1:5432/test", help="PostgreSQL (slots)")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/12", help="Redis broker (slots)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = {}
    if args.what in ("acquire", "all"):
        out["acquire"] = bench_acquire(args.n)
    if args.what in ("rss", "all"):
        out["rss"] = bench_rss(args.runs, args.every, args.max_contexts)
    if args.what == "slots":
        out["slots"] = bench_slots([int(k) for k in args.slots.split(",")], args.jobs, args.db, args.broker)
    if args.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
