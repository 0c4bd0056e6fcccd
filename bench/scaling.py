"""Benchmark: the scaling curve — pages/s, CPU per page and memory per slot at K runs at once.

The workload of ``bench/throughput.py`` (jobs of 5 listing pages of the demo site, every page's 10
quotes extracted and checked) at each concurrency K of ``--k`` (default 1,2,4,8), four ways:

* ``prefork``: ``browserq worker --concurrency K`` (K processes, K Chromiums), runs sent with
  ``apply_async`` on Redis, the store on a scratch PostgreSQL database, every setting at its default;
* ``threads``: ``browserq worker --pool threads --concurrency K`` (one process, one Chromium, K
  contexts on the process's event loop);
* ``raw_fresh_tuned``: the hand-written async Playwright script of throughput.py, a fresh context
  per job, on a Chromium with browserq's flags, K lanes;
* ``crawlee``: Crawlee's ``PlaywrightCrawler`` with its defaults (throughput.py's way (3)), K at once.

Every way is a process tree of its own: the workers as started by ``browserq worker``, the raw
script and Crawlee in a subprocess of this script (``--serve``) that takes "run N jobs" orders on
stdin, so that each way's CPU and memory can be read from the outside alike, and none shares a
process (or a GIL) with the demo site served here. For each K the four trees are started, warmed
up (2K jobs), then timed in ``--rounds`` interleaved rounds (the order rotates per round) of
``max(--min-jobs, --jobs-per-slot × K)`` jobs, and stopped. Per way and round:

* **pages/s**: pages checked / wall time from the first job sent to the last result;
* **CPU-seconds per 1,000 pages**: the way's tree's CPU time, counted by the kernel in a cgroup
  of the way's own (:mod:`cpu_groups`; root) before the round and 1 s after its end: every process
  of the tree and every process it started, the ones that ended in the round included (renderers
  of closed contexts, Crawlee's per-crawl driver and browser, prefork children). Its split into
  the browser, the driver and Python is read from ``/proc/<pid>/stat`` (user + system, plus
  ``cutime``/``cstime`` of reaped children) and misses the processes that ended unreaped by the
  tree — Chromium's renderers of closed contexts are not counted into any tree process —, so the
  rest is printed as ``ended``. Without a writable cgroup the total is that ``/proc`` sum, and
  the output says so (``cpu_counted_by_cgroup`` in the JSON). Not included: the producer (this
  process), PostgreSQL and Redis (``servers_cpu_s`` in the JSON: server-wide, so other users of
  the same servers are in it too);
* **MB per slot**: the tree's memory sampled during the round, median / K, split into the
  browser's processes (every process of the Chromium program), the Playwright drivers (``node``)
  and the rest (Python: Celery, browserq; the script's own process). Two figures: the PSS
  (``smaps_rollup``, every ``--sample-s``) on this machine, and the **footprint**
  (``engines.footprint_mb``, every ``--footprint-every`` samples): what the tree would occupy
  alone on a host, i.e. its PSS on a dedicated worker host. They differ because PSS splits a
  file page (Chromium's program text, libraries) among every process on the machine that maps
  it: next to other people's Chromiums a tree's PSS leaves most of its program text out. Goal 4
  is judged on the footprint. The browser's PSS is also given by process kind (renderers, GPU,
  network service, …) with the number of processes.

``others_cpu_share``: the CPU the rest of the machine used during the round (everything but the
way's tree: other users, this process, PostgreSQL, Redis, the idle trees of the other ways) over the
CPU time available — a shared machine's contention, printed so that figures can be read with it.

    .venv/bin/python bench/scaling.py [--k 1,2,4,8] [--ways prefork,threads,raw_fresh_tuned,crawlee]
        [--rounds 2] [--jobs-per-slot 6] [--min-jobs 12] [--sample-s 1.0] [--footprint-every 15]
        [--set KEY=VALUE] [--json]
        [--db postgresql+psycopg://postgres@127.0.0.1:5432/test] [--broker redis://127.0.0.1:6379/12]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

from cpu_groups import CpuGroup, remove_groups
from engines import Sampler, of_driver, of_engine, tree
from scrape_and_form import browserq_revision, chromium_version, database
from throughput import (
    CRAWLEE_MISSING,
    DEFAULT_BROKER,
    DEFAULT_DB,
    PAGES_PER_JOB,
    RESULT_TIMEOUT_S,
    RawPlaywright,
    browserq_env,
    crawlee_crawl,
    crawlee_version,
    progress,
    settings_for,
    start_worker,
    submit_and_wait,
    worker_settings,
)

from browserq.demo.site import DemoSite
from browserq.engines import CHROMIUM

WAYS = ("prefork", "threads", "raw_fresh_tuned", "crawlee")
GOAL_PSS_PER_SLOT_MB = 150.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
GROUP_PREFIX = "bq-scaling-"  # the ways' cgroups
SERVERS = {"postgres", "redis-server"}


# --- CPU time, read from /proc -------------------------------------------------------------------
def cpu_s(pids: list[int]) -> float:
    """utime + stime + cutime + cstime of ``pids`` (the children they reaped included)."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited meanwhile: its parent's cutime has it once reaped
        ticks += sum(int(v) for v in fields[11:15])
    return ticks / CLK_TCK


def cpu_by_part(root: int) -> dict[str, float]:
    """:func:`cpu_s` of ``root``'s tree by part. A process that ended is in its reaper's part:
    renderers in the browser's, Crawlee's per-crawl driver and browser in Python's."""
    pids = tree(root)
    browser, driver = set(of_engine(pids, CHROMIUM)), set(of_driver(pids))
    return {"browser": cpu_s(sorted(browser)), "driver": cpu_s(sorted(driver)),
            "python": cpu_s([p for p in pids if p not in browser and p not in driver])}


def machine_busy_s() -> float:
    """CPU time the whole machine spent not idle (all cores), from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / CLK_TCK


def servers_pids() -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(os.readlink(entry / "exe")).name in SERVERS:
                out.append(int(entry.name))
        except OSError:
            continue
    return out


# --- raw and Crawlee in a process of their own ---------------------------------------------------
def adopt_orphans() -> None:
    """Make this process the subreaper of its descendants and reap the orphans among them.

    Crawlee stops its Playwright driver while the driver's Chromium processes are still exiting:
    they are re-parented away from the tree (to PID 1 by default) and their CPU never reaches the
    tree's ``cutime`` (measured: half of Crawlee's CPU went missing). As subreaper this process
    inherits them; a thread reaps every exited child but ``node`` (the drivers, which asyncio's
    child watcher waits for), so their CPU lands in this process's ``cutime``.
    """
    import ctypes
    import threading

    pr_set_child_subreaper = 36
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0) != 0:
        progress("note: PR_SET_CHILD_SUBREAPER refused; orphans' CPU is not counted")
        return

    def reap() -> None:
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                info = None
            comm = ""
            if info is not None:
                with contextlib.suppress(OSError):
                    comm = Path(f"/proc/{info.si_pid}/comm").read_text().strip()
            if info is None or comm == "node":
                time.sleep(0.1)
                continue
            with contextlib.suppress(ChildProcessError):
                os.waitpid(info.si_pid, 0)

    threading.Thread(target=reap, daemon=True).start()


def serve(way: str, k: int) -> int:
    """The ``--serve`` side: one ``N URL`` order a line on stdin, the pages read a line on stdout."""
    adopt_orphans()
    with tempfile.TemporaryDirectory(prefix="browserq-scaling-host-") as tmp, settings_for(Path(tmp)) as settings:
        loop = asyncio.Runner()
        raw = RawPlaywright(settings, tuned=True)
        if way == "raw_fresh_tuned":
            loop.run(raw.start())
        print("ready", flush=True)
        try:
            for line in sys.stdin:
                jobs, url = int(line.split()[0]), line.split()[1]
                if way == "raw_fresh_tuned":
                    pages = loop.run(raw.crawl(url, jobs, k, reuse=False))
                else:
                    pages = loop.run(crawlee_crawl(settings, url, jobs, k, incognito=False))
                print(pages, flush=True)
        finally:
            loop.run(raw.stop())
            loop.close()
    return 0


class Host:
    """A ``--serve`` subprocess (its own session, its log in ``tmp``)."""

    def __init__(self, way: str, k: int, tmp: Path) -> None:
        self.log = tmp / f"host-{way}-{k}.log"
        env = {**os.environ, "CRAWLEE_STORAGE_DIR": str(tmp / f"crawlee-{k}")}
        with self.log.open("ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, __file__, "--serve", way, "--k", str(k)], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, text=True, env=env, start_new_session=True)
        self._expect("ready")

    def _expect(self, what: str | None = None) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line or (what and line != what):
            raise RuntimeError(f"host {self.proc.pid} said {line!r}:\n{self.log.read_text()[-2000:]}")
        return line

    def run(self, url: str, jobs: int) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{jobs} {url}\n")
        self.proc.stdin.flush()
        return int(self._expect())

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(10)


# --- one concurrency K ---------------------------------------------------------------------------
@dataclass
class Way:
    name: str
    root: int
    run: Callable[[int], int]
    stop: Callable[[], None]
    rounds: list[dict[str, float]] = field(default_factory=list)
    group: CpuGroup | None = None  # counts the tree's CPU, ended processes included

    def count_cpu(self, k: int) -> None:
        """Put the tree (up and idle: nothing has run yet) in a cgroup; what it starts is born there."""
        self.group = CpuGroup.make(f"{GROUP_PREFIX}{os.getpid()}-{self.name}-{k}")
        if self.group is not None and not self.group.adopt(tree(self.root)):
            self.group = None

    def cpu_s(self) -> float | None:
        return self.group.seconds() if self.group is not None else None


def start_ways(args: argparse.Namespace, k: int, env: dict[str, str], url: str, tmp: Path) -> list[Way]:
    ways: list[Way] = []
    try:
        for name in args.ways:
            if name in ("prefork", "threads"):
                wenv = {**env, "BROWSERQ_QUEUE": f"{env['BROWSERQ_QUEUE']}_{name}{k}"}
                progress(f"K={k}: starting browserq worker --concurrency {k} ({name})")
                worker = start_worker(f"{name}{k}", wenv, k, name, tmp)
                send = partial(submit_and_wait, url, queue=worker.queue, timeout_s=RESULT_TIMEOUT_S)
                ways.append(Way(name, worker.proc.pid, send, worker.stop))
            else:
                progress(f"K={k}: starting {name} host")
                host = Host(name, k, tmp)
                ways.append(Way(name, host.proc.pid, partial(host.run, url), host.stop))
    except BaseException:
        for way in ways:
            way.stop()
        raise
    for way in ways:
        way.count_cpu(k)
    return ways


def memory(sampler: Sampler, k: int) -> dict[str, float]:
    """Per slot, medians of the samples: PSS on this machine and the footprint alone, by part;
    the browser's processes by kind (whole way, not per slot: median MB and process count)."""
    med = {part: statistics.median(getattr(sampler, part) or [0.0]) for part in ("total", "browser", "driver")}
    out = {"pss_mb_per_slot": med["total"] / k, "browser_pss_mb_per_slot": med["browser"] / k,
           "driver_pss_mb_per_slot": med["driver"] / k,
           "python_pss_mb_per_slot": (med["total"] - med["browser"] - med["driver"]) / k,
           "pss_samples": len(sampler.total), "footprint_samples": len(sampler.footprints)}
    for part in ("total", "browser", "driver", "python") if sampler.footprints else ():
        name = "footprint_mb_per_slot" if part == "total" else f"{part}_footprint_mb_per_slot"
        out[name] = statistics.median(f[part] for f in sampler.footprints) / k
    for kind in sorted({kind for sample in sampler.kinds for kind in sample}):
        out[f"browser:{kind}:mb"] = statistics.median(x.get(kind, (0.0, 0))[0] for x in sampler.kinds)
        out[f"browser:{kind}:processes"] = statistics.median(x.get(kind, (0.0, 0))[1] for x in sampler.kinds)
    return out


def timed_round(args: argparse.Namespace, way: Way, k: int, jobs: int) -> dict[str, float]:
    """One round of ``way``: pages/s, the tree's CPU, the machine's and the servers' CPU, memory."""
    servers = servers_pids()
    cpu0, busy0, servers0 = cpu_by_part(way.root), machine_busy_s(), cpu_s(servers)
    counted0 = way.cpu_s()
    with Sampler(way.root, CHROMIUM, args.sample_s, frozenset(), args.footprint_every) as sampler:
        started = time.perf_counter()
        pages = way.run(jobs)
        wall = time.perf_counter() - started
    time.sleep(1.0)  # the runs' last context closes and spare refills land in the window
    parts = {part: v - cpu0[part] for part, v in cpu_by_part(way.root).items()}
    counted = way.cpu_s()
    cpu = counted - counted0 if counted is not None and counted0 is not None else sum(parts.values())
    parts["ended"] = cpu - sum(parts.values())  # ended in the round, reaped by no process of the tree
    busy = machine_busy_s() - busy0
    span = time.perf_counter() - started
    if pages != jobs * PAGES_PER_JOB:
        raise AssertionError(f"{way.name}: {pages} pages, expected {jobs * PAGES_PER_JOB}")
    return {
        **{f"{part}_cpu_s_per_1000_pages": 1000 * v / pages for part, v in parts.items()},
        "pages_per_s": pages / wall, "wall_s": wall, "pages": pages, "cpu_s": cpu,
        "cpu_s_per_1000_pages": 1000 * cpu / pages, "servers_cpu_s": cpu_s(servers) - servers0,
        "others_cpu_share": max(0.0, busy - cpu) / (span * (os.cpu_count() or 1)),
        "sampler_cpu_s": sampler.cpu_s, "load_1m": os.getloadavg()[0], **memory(sampler, k),
        "cpu_counted_by_cgroup": float(counted is not None),
    }


def measure_k(args: argparse.Namespace, k: int, env: dict[str, str], url: str, tmp: Path) -> dict[str, Any]:
    jobs = max(args.min_jobs, args.jobs_per_slot * k)
    ways = start_ways(args, k, env, url, tmp)
    try:
        for way in ways:
            progress(f"K={k}: warm-up {way.name} ({2 * k} jobs)")
            if way.run(2 * k) != 2 * k * PAGES_PER_JOB:
                raise AssertionError(f"{way.name}: wrong page count in the warm-up")
        for r in range(args.rounds):
            for way in ways[r % len(ways):] + ways[: r % len(ways)]:
                one = timed_round(args, way, k, jobs)
                way.rounds.append(one)
                alone = one.get("footprint_mb_per_slot", float("nan"))
                progress(f"K={k} round {r + 1}/{args.rounds}: {way.name:<16} {one['pages_per_s']:6.2f} pages/s  "
                         f"{one['cpu_s_per_1000_pages']:6.0f} CPU-s/1000 pages  {alone:5.0f} MB/slot alone, "
                         f"{one['pss_mb_per_slot']:5.0f} PSS here  others {one['others_cpu_share']:.0%}  "
                         f"load {one['load_1m']:.1f}")
    finally:
        for way in ways:
            way.stop()
            if way.group is not None:
                way.group.remove()
    out: dict[str, Any] = {"k": k, "jobs": jobs, "ways": {}}
    for way in ways:
        keys = sorted({key for r in way.rounds for key in r if key != "pages"})
        out["ways"][way.name] = {key: round(statistics.median(r[key] for r in way.rounds if key in r), 3)
                                 for key in keys}
        out["ways"][way.name]["pages_per_s_rounds"] = [round(r["pages_per_s"], 2) for r in way.rounds]
        out["ways"][way.name]["rounds"] = way.rounds
    return out


# --- the report ----------------------------------------------------------------------------------
def per_slot_mb(way: dict[str, Any]) -> float:
    """The memory figure of goal 4: the footprint alone (= PSS on a dedicated host) when measured."""
    return float(way.get("footprint_mb_per_slot", way["pss_mb_per_slot"]))


def goal4(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Goal 4 at the largest K measured with both browserq ways: threads ≤ 150 MB per slot (on a
    dedicated host) and its pages/s ≥ prefork's."""
    both = [p for p in points if {"prefork", "threads"} <= set(p["ways"])]
    if not both:
        return {}
    p = both[-1]
    thr, pre = p["ways"]["threads"], p["ways"]["prefork"]
    memory_ok, speed_ok = per_slot_mb(thr) <= GOAL_PSS_PER_SLOT_MB, thr["pages_per_s"] >= pre["pages_per_s"]
    return {"k": p["k"], "threads_mb_per_slot": round(per_slot_mb(thr), 1), "memory_met": memory_ok,
            "memory_figure": "footprint alone" if "footprint_mb_per_slot" in thr else "PSS on this machine",
            "threads_over_prefork_pages_per_s": round(thr["pages_per_s"] / pre["pages_per_s"], 3),
            "throughput_met": speed_ok, "met": memory_ok and speed_ok}


def collect(args: argparse.Namespace, points: list[dict[str, Any]], load_start: float, chromium: str | None) -> dict[str, Any]:
    return {
        "benchmark": "scaling", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "browserq_revision": browserq_revision(), "worker_settings": worker_settings(args.set),
        "workload": {"k": args.k, "jobs_per_slot": args.jobs_per_slot, "min_jobs": args.min_jobs,
                     "pages_per_job": PAGES_PER_JOB, "rounds": args.rounds, "sample_s": args.sample_s,
                     "footprint_every": args.footprint_every},
        "skipped": args.skipped,
        "machine": {"cpus": os.cpu_count(), "load_1m_at_start": round(load_start, 2),
                    "load_1m_at_end": round(os.getloadavg()[0], 2), "platform": platform.platform(),
                    "python": platform.python_version(), "playwright": metadata.version("playwright"),
                    "crawlee": crawlee_version(), "chromium": chromium_version(chromium)},
        "points": points, "goal4": goal4(points),
    }


def print_report(result: dict[str, Any]) -> None:
    m, w = result["machine"], result["workload"]
    print(f"scaling: K = {w['k']}, jobs = max({w['min_jobs']}, {w['jobs_per_slot']} x K) x {w['pages_per_job']} pages, "
          f"{w['rounds']} interleaved rounds — {result['date']}")
    print(f"browserq {result['browserq_revision']} · {m['chromium']} · playwright {m['playwright']} · crawlee "
          f"{m['crawlee'] or '-'} · {m['cpus']} CPUs, load {m['load_1m_at_start']} at start, {m['load_1m_at_end']} at end")
    if result["worker_settings"]:
        print("worker settings: " + " ".join(f"{k}={v}" for k, v in result["worker_settings"].items()))
    for way, why in result["skipped"].items():
        print(f"{way}: {why}")
    print("MB/slot: the way's process tree alone on a host (footprint), median / K; of it browser, driver, python; "
          "PSS: on this machine (shared pages split with everything else running)")
    print(f"{'K':>2} {'way':<16}{'pages/s':>8} {'CPU-s/1000 p':>12} {'MB/slot':>8} {'browser':>8} {'driver':>7} "
          f"{'python':>7} {'PSS/slot':>9} {'others':>7}  pages/s by round")
    nan = float("nan")
    for p in result["points"]:
        for name, v in p["ways"].items():
            print(f"{p['k']:>2} {name:<16}{v['pages_per_s']:>8.2f} {v['cpu_s_per_1000_pages']:>12.0f} "
                  f"{v.get('footprint_mb_per_slot', nan):>8.0f} {v.get('browser_footprint_mb_per_slot', nan):>8.0f} "
                  f"{v.get('driver_footprint_mb_per_slot', nan):>7.0f} {v.get('python_footprint_mb_per_slot', nan):>7.0f} "
                  f"{v['pss_mb_per_slot']:>9.0f} {v['others_cpu_share']:>7.0%}  {v['pages_per_s_rounds']}")
        ways = p["ways"]
        ratios = [f"{a}/{b} {ways[a]['pages_per_s'] / ways[b]['pages_per_s']:.2f}"
                  for a, b in (("threads", "prefork"), ("prefork", "raw_fresh_tuned"), ("threads", "raw_fresh_tuned"),
                               ("prefork", "crawlee"), ("threads", "crawlee")) if a in ways and b in ways]
        if ratios:
            print(f"   K={p['k']} pages/s ratios: " + ", ".join(ratios))
    counted = all(v.get("cpu_counted_by_cgroup") for p in result["points"] for v in p["ways"].values())
    print("CPU counted " + ("by the kernel, a cgroup per way (processes that ended in a round included)" if counted
                            else "from /proc only (no writable cgroup: processes that ended unreaped are missing)"))
    print("where it goes: CPU-s per 1,000 pages of the browser / driver / python / ended (processes that ended "
          "in the round, reaped by none of the tree: renderers of closed contexts; Crawlee's drivers and browsers "
          "end each crawl, so theirs is in python); the browser's processes by kind, PSS on this machine, MB of "
          "the whole way / processes")
    for p in result["points"]:
        for name, v in p["ways"].items():
            kinds = sorted(k[8:-3] for k in v if k.startswith("browser:") and k.endswith(":mb"))
            print(f"{p['k']:>2} {name:<16}{v['browser_cpu_s_per_1000_pages']:>4.0f} / {v['driver_cpu_s_per_1000_pages']:>3.0f}"
                  f" / {v['python_cpu_s_per_1000_pages']:>3.0f} / {v.get('ended_cpu_s_per_1000_pages', nan):>3.0f}   "
                  + ", ".join(
                      f"{kind} {v[f'browser:{kind}:mb']:.0f}/{v[f'browser:{kind}:processes']:g}" for kind in kinds))
    g = result["goal4"]
    if g:
        print(f"goal 4 at K={g['k']}: threads {g['threads_mb_per_slot']:.0f} MB/slot ({g['memory_figure']}; ≤ "
              f"{GOAL_PSS_PER_SLOT_MB:.0f}: {'met' if g['memory_met'] else 'NOT met'}), threads/prefork pages/s "
              f"{g['threads_over_prefork_pages_per_s']:.2f} (≥ 1: {'met' if g['throughput_met'] else 'NOT met'})")


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="browserq-scaling-") as tmp_name:
        tmp = Path(tmp_name)
        with settings_for(tmp) as settings, DemoSite() as site, database(args.db, tmp) as db_url:
            env = browserq_env(db_url, args.broker, f"bq_scaling_{uuid.uuid4().hex[:8]}", tmp / "artifacts")
            env.update(worker_settings(args.set))
            os.environ.update(env)  # this process is the producer, with the workers' settings
            from browserq import celery_app
            from browserq.settings import reset_settings_cache

            reset_settings_cache()
            celery_app.reset_producer_cache()
            try:
                points = [measure_k(args, k, env, f"{site.url}/quotes/", tmp) for k in args.k]
            finally:
                remove_groups(f"{GROUP_PREFIX}{os.getpid()}-")  # a way's stragglers have exited by now
            chromium = settings.resolve_chromium()
    return collect(args, points, load_start, chromium)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--k", default="1,2,4,8", help="concurrencies, comma-separated (default 1,2,4,8)")
    parser.add_argument("--ways", default=",".join(WAYS), help=f"comma-separated (default {','.join(WAYS)})")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds per K (default 2)")
    parser.add_argument("--jobs-per-slot", type=int, default=6, help="jobs per round = this x K ... (default 6)")
    parser.add_argument("--min-jobs", type=int, default=12, help="... but at least this many (default 12)")
    parser.add_argument("--sample-s", type=float, default=1.0, help="PSS sampling interval (default 1 s)")
    parser.add_argument("--footprint-every", type=int, default=15, help="the footprint alone at the 3rd "
                        "sample and every this many after it (default 15; 0: not measured)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a browserq setting for the workers (BROWSERQ_KEY), e.g. --set context_prewarm=0")
    parser.add_argument("--db", default=DEFAULT_DB, help=f"PostgreSQL server URL (default {DEFAULT_DB})")
    parser.add_argument("--broker", default=DEFAULT_BROKER, help=f"Redis broker URL (default {DEFAULT_BROKER})")
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    parser.add_argument("--serve", choices=("raw_fresh_tuned", "crawlee"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.k = [int(k) for k in args.k.split(",") if k.strip()]
    if args.serve:
        return serve(args.serve, args.k[0])
    args.ways = [w.strip() for w in args.ways.split(",") if w.strip()]
    if set(args.ways) - set(WAYS) or min([args.rounds, args.jobs_per_slot, args.min_jobs, *args.k]) < 1:
        parser.error(f"ways are {', '.join(WAYS)}; counts must be at least 1")
    args.skipped = {}
    if "crawlee" in args.ways and crawlee_version() is None:
        args.skipped["crawlee"] = CRAWLEE_MISSING
        args.ways.remove("crawlee")
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
