"""Benchmark: full Chromium against chrome-headless-shell (``BROWSERQ_BROWSER``), side by side.

The workload of ``bench/throughput.py`` (``--jobs`` jobs of the ``quotes`` template, each 5 listing
pages of the demo site, ``--concurrency`` at a time), done four ways in interleaved rounds, so that
the load of a shared machine falls on both engines alike:

* ``browserq:<engine>``: ``run_template.apply_async`` to a real ``browserq worker --concurrency N``
  (prefork) started with ``BROWSERQ_BROWSER=<engine>``, one worker per engine, each on its own queue,
  the store on a scratch PostgreSQL database, every step recorded (stealth on, the default);
* ``raw:<engine>``: a hand-written async Playwright script in this process, a fresh context per job,
  on the same binary with browserq's flags (``raw_fresh_tuned`` of throughput.py).

Per round and way: pages/s, and PSS (``/proc/<pid>/smaps_rollup``) sampled every
``--sample-s`` while the round runs, median of the samples: the browser's processes (every
process whose executable is the engine's binary: browser, zygotes, renderers, GPU/utility) and,
for the workers, the whole worker tree (Celery parent and children, Playwright drivers,
browsers). Per slot = divided by the concurrency. Printed per way: median pages/s and PSS over the
rounds, and the headless-shell/chromium ratios per round. No asserts on timings.

    .venv/bin/python bench/engines.py [--jobs 20] [--concurrency 2] [--rounds 4] [--json]
        [--db postgresql+psycopg://postgres@127.0.0.1:5432/test] [--broker redis://127.0.0.1:6379/12]
"""

from __future__ import annotations

import argparse
import array
import asyncio
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from pool import process_children
from scrape_and_form import chromium_version, database
from throughput import (
    DEFAULT_BROKER,
    DEFAULT_DB,
    PAGES_PER_JOB,
    RESULT_TIMEOUT_S,
    RawPlaywright,
    Worker,
    browserq_env,
    progress,
    start_worker,
    submit_and_wait,
)

from browserq.demo.site import DemoSite
from browserq.engines import CHROMIUM, ENGINES, HEADLESS_SHELL
from browserq.settings import Settings, load_settings

REPO = Path(__file__).resolve().parent.parent


# --- PSS -----------------------------------------------------------------------------------------
def tree(root: int, skip: frozenset[int] = frozenset()) -> list[int]:
    """``root`` and every descendant, without the subtrees of ``skip`` (the workers, for this process)."""
    children, out, stack = process_children(), [], [root]
    while stack:
        pid = stack.pop()
        if pid in skip:
            continue
        out.append(pid)
        stack.extend(children.get(pid, []))
    return out


def pss_mb(pids: list[int]) -> float:
    total_kb = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total_kb += int(line.split()[1])
                    break
        except (OSError, ValueError):
            continue  # exited meanwhile
    return total_kb / 1024


PAGE = 4096
PRESENT, FILE_PAGE, PFN_MASK = 1 << 63, 1 << 61, (1 << 55) - 1


def footprint_mb(groups: dict[str, list[int]]) -> dict[str, float] | None:
    """What each group of processes, and all of them (``total``), would occupy alone on a host.

    PSS splits a shared page among every process that maps it, machine-wide: on a machine where
    other people's Chromiums, Pythons and nodes run, a tree's PSS leaves out most of its program
    text and libraries (measured here: a threads worker's 356 MB PSS against 622 MB alone). So:
    anonymous and shared-memory pages by PSS (shared only inside the tree: fork and zygote
    copy-on-write, memfd), file pages once per physical page (``/proc/<pid>/pagemap``; needs root
    for the page frame numbers: ``None`` without).
    """
    anon_kb: dict[str, int] = {}
    pfns: dict[str, set[int]] = {}
    for group, pids in groups.items():
        anon_kb[group], pfns[group] = 0, set()
        for pid in pids:
            try:
                for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                    if line.startswith(("Pss_Anon:", "Pss_Shmem:")):
                        anon_kb[group] += int(line.split()[1])
                maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
                with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
                    for line in maps:
                        fields = line.split(None, 5)
                        path = fields[5] if len(fields) > 5 else ""
                        if fields[4] == "0" or not path.startswith("/") or path.startswith(("/memfd:", "/dev/", "/SYSV")):
                            continue
                        start, end = (int(x, 16) for x in fields[0].split("-"))
                        pagemap.seek(start // PAGE * 8)
                        entries = array.array("Q", pagemap.read((end - start) // PAGE * 8))
                        pfns[group].update(e & PFN_MASK for e in entries if e & PRESENT and e & FILE_PAGE)
            except (OSError, ValueError):
                continue  # exited meanwhile
    every = set().union(*pfns.values())
    if every and every <= {0}:
        return None
    out = {g: (anon_kb[g] * 1024 + len(pfns[g]) * PAGE) / 2**20 for g in groups}
    out["total"] = (sum(anon_kb.values()) * 1024 + len(every) * PAGE) / 2**20
    return out


#: The program names each engine's processes run (Debian's /usr/bin names are shell wrappers
#: around /usr/lib/chromium/<name>; Playwright's builds are chrome and chrome-headless-shell).
PROGRAMS = {CHROMIUM: {"chromium", "chrome"}, HEADLESS_SHELL: {"chromium-headless-shell", "chrome-headless-shell"}}


def of_engine(pids: list[int], engine: str) -> list[int]:
    """The pids among ``pids`` that run ``engine``'s program (browser, zygotes, renderers, GPU, utility)."""
    out = []
    for pid in pids:
        try:
            if Path(os.readlink(f"/proc/{pid}/exe")).name in PROGRAMS[engine]:
                out.append(pid)
        except OSError:
            continue
    return out


def of_driver(pids: list[int]) -> list[int]:
    """The pids among ``pids`` that are a Playwright driver (its bundled ``node``)."""
    out = []
    for pid in pids:
        try:
            if Path(os.readlink(f"/proc/{pid}/exe")).name == "node":
                out.append(pid)
        except OSError:
            continue
    return out


def browser_kind(pid: int) -> str:
    """What a browser process is: ``browser`` (no ``--type``), ``renderer``, ``zygote``, ``gpu-process``,
    ``utility:network`` (the utility sub-type's first word), …"""
    try:  # Chromium rewrites its command line into one space-separated string
        args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").split()
    except OSError:
        return "gone"
    kind = next((a.removeprefix("--type=") for a in args if a.startswith("--type=")), "browser")
    sub = next((a.removeprefix("--utility-sub-type=") for a in args if a.startswith("--utility-sub-type=")), "")
    return f"{kind}:{sub.split('.')[0]}" if sub else kind


class Sampler:
    """PSS of a process set every ``interval_s`` in a thread, while a round runs: the whole set,
    the browser's processes (also by kind: ``kinds``, MB and process count per sample) and the
    Playwright drivers (the rest is Python); with ``footprint_every``, at the 3rd sample and every
    that many after it, also :func:`footprint_mb` by part (heavier: ~20 ms per process); ``cpu_s``:
    the sampling thread's own CPU time (it reads every process's smaps_rollup: not free)."""

    def __init__(self, root: int, engine: str, interval_s: float, skip: frozenset[int],
                 footprint_every: int = 0) -> None:
        self.root, self.engine, self.interval_s, self.skip = root, engine, interval_s, skip
        self.footprint_every = footprint_every
        self.footprints: list[dict[str, float]] = []
        self.browser: list[float] = []
        self.driver: list[float] = []
        self.total: list[float] = []
        self.kinds: list[dict[str, tuple[float, int]]] = []
        self.cpu_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(self.interval_s):
            n += 1
            pids = tree(self.root, self.skip)
            browser, driver = set(of_engine(pids, self.engine)), set(of_driver(pids))
            if self.footprint_every and n % self.footprint_every == 3 % self.footprint_every:
                groups = {"browser": sorted(browser), "driver": sorted(driver),
                          "python": [p for p in pids if p not in browser and p not in driver]}
                if (footprint := footprint_mb(groups)) is not None:
                    self.footprints.append(footprint)
            each = {pid: pss_mb([pid]) for pid in pids}  # one read of each process
            self.browser.append(sum(v for pid, v in each.items() if pid in browser))
            self.driver.append(sum(v for pid, v in each.items() if pid in driver))
            self.total.append(sum(each.values()))
            kinds: dict[str, tuple[float, int]] = {}
            for pid in browser:
                if (kind := browser_kind(pid)) == "gone":
                    continue
                mb, count = kinds.get(kind, (0.0, 0))
                kinds[kind] = (mb + each.get(pid, 0.0), count + 1)
            self.kinds.append(kinds)
        self.cpu_s = time.thread_time()

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# --- the ways ------------------------------------------------------------------------------------
class Way:
    """One way: how to run ``jobs`` jobs, and whose processes to sample."""

    def __init__(self, name: str, engine: str, binary: str, run: Any, root: int) -> None:
        self.name, self.engine, self.binary, self.run, self.root = name, engine, binary, run, root
        self.pages_per_s: list[float] = []
        self.browser_pss: list[float] = []
        self.total_pss: list[float] = []


def engine_settings(tmp: Path, engine: str) -> Settings:
    return load_settings(browser=engine, artifacts_dir=tmp / "artifacts", templates_dir=REPO / "templates",
                         log_level="WARNING")


def setup(args: argparse.Namespace, tmp: Path, db_url: str, start_url: str,
          loop: asyncio.Runner, raws: list[RawPlaywright], workers: list[Worker]) -> list[Way]:
    queue = f"bq_engines_{uuid.uuid4().hex[:8]}"
    env = browserq_env(db_url, args.broker, queue, tmp / "artifacts")
    os.environ.update(env)  # this process is the producer
    from browserq import celery_app
    from browserq.settings import reset_settings_cache

    reset_settings_cache()
    celery_app.reset_producer_cache()
    ways = []
    for engine in ENGINES:
        binary = engine_settings(tmp, engine).resolve_chromium()
        if binary is None:
            raise SystemExit(f"{engine}: no system binary to sample (install it; see docs/browsers.md)")
        if "browserq" in args.kinds:
            wenv = {**env, "BROWSERQ_QUEUE": f"{queue}_{engine}", "BROWSERQ_BROWSER": engine}
            progress(f"starting browserq worker --concurrency {args.concurrency} ({engine})")
            worker = start_worker(engine, wenv, args.concurrency, "prefork", tmp)
            workers.append(worker)
            ways.append(Way(f"browserq:{engine}", engine, binary,
                            lambda jobs, q=worker.queue: submit_and_wait(start_url, jobs, q, RESULT_TIMEOUT_S),
                            worker.proc.pid))
        if "raw" in args.kinds:
            raw = RawPlaywright(engine_settings(tmp, engine), tuned=True)
            loop.run(raw.start())
            raws.append(raw)
            ways.append(Way(f"raw:{engine}", engine, binary,
                            lambda jobs, r=raw: loop.run(r.crawl(start_url, jobs, args.concurrency, False)),
                            os.getpid()))
    return ways


def rounds(args: argparse.Namespace, ways: list[Way], workers: list[Worker]) -> None:
    skip = frozenset(w.proc.pid for w in workers)
    for way in ways:  # warm-up: every worker child launches its browser
        progress(f"warm-up: {way.name}")
        jobs = 2 * args.concurrency
        if way.run(jobs) != jobs * PAGES_PER_JOB:
            raise AssertionError(f"{way.name}: wrong page count in the warm-up")
    for r in range(args.rounds):
        # alternate which engine goes first, so neither always follows the other
        order = ways if r % 2 == 0 else [w for e in reversed(ENGINES) for w in ways if w.engine == e]
        for way in order:
            with Sampler(way.root, way.engine, args.sample_s, skip if way.root == os.getpid() else frozenset()) as sampler:
                started = time.perf_counter()
                pages = way.run(args.jobs)
                elapsed = time.perf_counter() - started
            if pages != args.jobs * PAGES_PER_JOB:
                raise AssertionError(f"{way.name}: {pages} pages, expected {args.jobs * PAGES_PER_JOB}")
            way.pages_per_s.append(pages / elapsed)
            way.browser_pss.append(statistics.median(sampler.browser or [0.0]))
            way.total_pss.append(statistics.median(sampler.total or [0.0]))
            progress(f"round {r + 1}/{args.rounds}: {way.name:<24} {pages / elapsed:6.2f} pages/s, "
                     f"browser PSS {way.browser_pss[-1]:6.0f} MB  load {os.getloadavg()[0]:.1f}")


# --- the report ----------------------------------------------------------------------------------
def collect(args: argparse.Namespace, ways: list[Way], load_start: float) -> dict[str, Any]:
    k = args.concurrency
    out: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "jobs": args.jobs, "concurrency": k, "rounds": args.rounds, "cores": os.cpu_count(),
        "load_start": round(load_start, 1), "load_end": round(os.getloadavg()[0], 1),
        "binaries": {w.engine: {"path": w.binary, "version": chromium_version(w.binary)} for w in ways},
        "ways": {},
        "ratios": {},
    }
    for w in ways:
        out["ways"][w.name] = {
            "pages_per_s": [round(x, 2) for x in w.pages_per_s],
            "pages_per_s_median": round(statistics.median(w.pages_per_s), 2),
            "browser_pss_mb_per_slot": [round(x / k) for x in w.browser_pss],
            "browser_pss_mb_per_slot_median": round(statistics.median(w.browser_pss) / k),
        }
        if w.name.startswith("browserq"):
            out["ways"][w.name]["worker_pss_mb_per_slot"] = [round(x / k) for x in w.total_pss]
            out["ways"][w.name]["worker_pss_mb_per_slot_median"] = round(statistics.median(w.total_pss) / k)
    by_name = {w.name: w for w in ways}
    for kind in args.kinds:
        full, shell = by_name.get(f"{kind}:{CHROMIUM}"), by_name.get(f"{kind}:{HEADLESS_SHELL}")
        if full and shell:
            out["ratios"][kind] = {
                "pages_per_s_per_round": [round(s / f, 3) for s, f in zip(shell.pages_per_s, full.pages_per_s, strict=True)],
                "browser_pss_per_round": [round(s / f, 3) for s, f in zip(shell.browser_pss, full.browser_pss, strict=True)],
            }
    return out


def print_report(result: dict[str, Any]) -> None:
    print(f"{result['date']}  jobs {result['jobs']} x {PAGES_PER_JOB} pages, concurrency {result['concurrency']}, "
          f"{result['rounds']} rounds, {result['cores']} cores, load {result['load_start']} -> {result['load_end']}")
    for engine, b in result["binaries"].items():
        print(f"  {engine}: {b['path']} ({b['version']})")
    print(f"{'way':<26}{'pages/s (median)':>18}{'browser PSS/slot':>18}{'worker PSS/slot':>17}  per round pages/s")
    for name, w in result["ways"].items():
        worker = w.get("worker_pss_mb_per_slot_median")
        shown = f"{worker} MB" if worker is not None else "-"
        print(f"{name:<26}{w['pages_per_s_median']:>18.2f}{w['browser_pss_mb_per_slot_median']:>15} MB"
              f"{shown:>17}  {w['pages_per_s']}")
    for kind, r in result["ratios"].items():
        print(f"{kind}: headless-shell / chromium per round: pages/s {r['pages_per_s_per_round']}, "
              f"browser PSS {r['browser_pss_per_round']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20, help="jobs per way and round (default 20)")
    parser.add_argument("--concurrency", type=int, default=2, help="jobs at a time (default 2)")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds (default 4)")
    parser.add_argument("--sample-s", type=float, default=0.5, help="PSS sampling interval (default 0.5 s)")
    parser.add_argument("--kinds", default="browserq,raw", help="browserq, raw or both (default both)")
    parser.add_argument("--db", default=DEFAULT_DB, help=f"PostgreSQL server URL (default {DEFAULT_DB})")
    parser.add_argument("--broker", default=DEFAULT_BROKER, help=f"Redis broker URL (default {DEFAULT_BROKER})")
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    args = parser.parse_args(argv)
    args.kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not set(args.kinds) <= {"browserq", "raw"} or min(args.jobs, args.concurrency, args.rounds) < 1:
        parser.error("--kinds takes browserq and/or raw; counts must be at least 1")
    load_start = os.getloadavg()[0]
    raws: list[RawPlaywright] = []
    workers: list[Worker] = []
    loop = asyncio.Runner()
    with tempfile.TemporaryDirectory(prefix="browserq-engines-") as tmp_name:
        tmp = Path(tmp_name)
        with DemoSite() as site, database(args.db, tmp) as db_url:
            try:
                ways = setup(args, tmp, db_url, f"{site.url}/quotes/", loop, raws, workers)
                rounds(args, ways, workers)
            finally:
                for worker in workers:
                    worker.stop()
                for raw in raws:
                    loop.run(raw.stop())
                loop.close()
    result = collect(args, ways, load_start)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
