"""Benchmark: where a job's CPU goes — Chromium's processes, Playwright's driver, Python — for a
hand-written script and for browserq, side by side.

On a machine whose cores are busy (throughput.py at concurrency ≥ cores, the test-suite) pages/s
is CPU per page; this says *which process* spends browserq's extra CPU. The workload is
throughput.py's job (the demo site's 5 quote listing pages, clicking Next, a fresh context per
job), one job at a time, ``--jobs`` per round, in one process per way and round:

* ``raw``: throughput.py's ``raw_fresh_tuned`` (async Playwright, browserq's Chromium and flags);
* ``browserq``: ``Runtime.run_loaded`` of ``templates/quotes.yaml`` in-process (SQLite store,
  every step recorded; no Celery: throughput.py prices that), defaults (stealth on, the
  allowed_domains guard on, one pre-warmed spare context);
* ``browserq_nostealth``, ``browserq_noguard`` (the template without ``allowed_domains``),
  ``browserq_bare`` (neither): what stealth and the guard cost;
* diagnostic ways that take one part out of the guard by patching it in that process only (not
  safe to run that way): ``browserq_keepfetch`` (``Fetch`` is never switched off between runs)
  and ``browserq_noegress`` (no page-side ``egress.js``).

Each way's process warms up (2 jobs), then its jobs are measured with
:class:`proc_accounting.ProcessCpu` over its whole process tree. Ways are interleaved per round;
printed per way: median CPU-s per job by kind of process and in all, and the ratio to ``raw``.
Needs root (process accounting). No asserts.

    sudo .venv/bin/python bench/cpu_by_process.py [--jobs 20] [--rounds 3] [--ways raw,browserq,…] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proc_accounting import ProcessCpu

REPO = Path(__file__).resolve().parent.parent
PAGES = 5


@dataclass(frozen=True)
class Way:
    """How one way runs the job: browserq or not, with stealth, with the template's guard, and
    which part of the guard (if any) is patched out of its process."""

    browserq: bool = True
    stealth: bool = True
    guard: bool = True
    without: str | None = None  # "fetch_switching" | "egress_js"


WAYS: dict[str, Way] = {
    "raw": Way(browserq=False),
    "browserq": Way(),
    "browserq_nostealth": Way(stealth=False),
    "browserq_noguard": Way(guard=False),
    "browserq_bare": Way(stealth=False, guard=False),
    "browserq_keepfetch": Way(without="fetch_switching"),
    "browserq_noegress": Way(without="egress_js"),
}


# --- one way in its own process ------------------------------------------------------------------
def phase(name: str, jobs: int) -> None:
    """Warm up, print ``ready``, wait for a line on stdin, run ``jobs`` jobs, print ``done``.

    A browserq way waits for its pool's spare context before each line, so the window holds
    exactly ``jobs`` runs and the spares they caused."""
    from browserq.demo.site import DemoSite
    from browserq.settings import Settings

    way = WAYS[name]
    with tempfile.TemporaryDirectory(prefix="bq_cpu_") as scratch:
        tmp = Path(scratch)
        settings = Settings(
            database_url=f"sqlite:///{tmp / 'browserq.db'}", artifacts_dir=tmp / "artifacts",
            templates_dir=REPO / "templates", stealth=way.stealth,
        )
        site = DemoSite().start()
        try:
            start = f"{site.url}/quotes/"
            if way.browserq:
                _browserq_jobs(name, way, settings, start, jobs)
            else:
                asyncio.run(_raw_jobs(settings, start, jobs))
        finally:
            site.stop()


async def _raw_jobs(settings: Any, start: str, jobs: int) -> None:
    from throughput import RawPlaywright

    raw = RawPlaywright(settings, tuned=True)
    await raw.start()
    await raw.crawl(start, 2, 1, reuse=False)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    assert await raw.crawl(start, jobs, 1, reuse=False) == jobs * PAGES
    print("done", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    await raw.stop()


def _browserq_jobs(name: str, way: Way, settings: Any, start: str, jobs: int) -> None:
    from scrape_and_form import wait_for_spares

    from browserq.execute.runtime import Runtime
    from browserq.templates.loader import load_template_text

    if way.without:
        take_out_of_the_guard(way.without)
    text = (REPO / "templates" / "quotes.yaml").read_text()
    if not way.guard:
        text = text.replace("  allowed_domains: [127.0.0.1, localhost]\n", "")
        text = text.replace("\nname: quotes\n", "\nname: quotes-unguarded\n")
        assert "allowed_domains:" not in text, "templates/quotes.yaml declares allowed_domains differently now"
    template = load_template_text(text, source=f"quotes ({name})")
    runtime = Runtime(settings)
    runtime.start()
    params = {"start_url": start, "max_pages": PAGES}

    def job() -> None:
        run = runtime.run_loaded(template, params)
        assert run.status == "completed", (run.status, run.error_code, run.error_message)

    for _ in range(2):
        job()
    wait_for_spares(runtime)
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(jobs):
        job()
    wait_for_spares(runtime)
    print("done", flush=True)
    sys.stdin.readline()
    runtime.stop()


def take_out_of_the_guard(part: str) -> None:
    """A diagnostic way: one part of the guard patched out of this process (fails loudly when the
    part it patches is no longer there, rather than measuring the unpatched guard)."""
    from browserq.browsers import domains

    async def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    if part == "fetch_switching":  # release() no longer switches Fetch off
        assert hasattr(domains.DomainGuard, "_update_patterns_locked"), "DomainGuard changed: update this way"
        domains.DomainGuard._update_patterns_locked = nothing  # type: ignore[method-assign]
    elif part == "egress_js":
        assert hasattr(domains, "confine_page_apis"), "domains.py changed: update this way"
        domains.confine_page_apis = nothing  # type: ignore[assignment]
    else:
        raise ValueError(f"no part of the guard is called {part!r}")


# --- the driver ----------------------------------------------------------------------------------
def measure(way: str, jobs: int) -> dict[str, float]:
    """One round of ``way``: CPU-s per job by kind of process, over its measured jobs."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'bench'}"}
    child = subprocess.Popen([sys.executable, __file__, "--phase", way, "--jobs", str(jobs)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdin is not None and child.stdout is not None
    try:
        if child.stdout.readline().strip() != "ready":
            raise SystemExit(f"cpu_by_process: the {way} process did not start")
        with ProcessCpu(root_pid=child.pid) as cpu:
            child.stdin.write("go\n")
            child.stdin.flush()
            if child.stdout.readline().strip() != "done":
                raise SystemExit(f"cpu_by_process: the {way} process failed")
        child.stdin.write("stop\n")
        child.stdin.flush()
        child.wait(60)
    finally:
        if child.poll() is None:
            child.kill()
    by_kind = cpu.by_kind()
    per_job = {kind: round(seconds / jobs, 4) for kind, seconds in by_kind.items() if abs(seconds) >= 0.01}
    per_job["all"] = round(sum(by_kind.values()) / jobs, 4)
    return per_job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ways", default=",".join(WAYS))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        phase(args.phase, args.jobs)
        return
    ways = [w.strip() for w in args.ways.split(",") if w.strip()]
    unknown = sorted(set(ways) - set(WAYS))
    if unknown:
        parser.error(f"unknown way(s) {', '.join(unknown)}: choose from {', '.join(WAYS)}")
    rounds: dict[str, list[dict[str, float]]] = {w: [] for w in ways}
    for number in range(1, args.rounds + 1):
        for way in ways:
            rounds[way].append(figures := measure(way, args.jobs))
            print(f"round {number}/{args.rounds}: {way:20s} {figures['all']:.3f} CPU-s per job  load "
                  f"{os.getloadavg()[0]:.1f}", file=sys.stderr)
    medians = {
        way: {kind: round(statistics.median(r.get(kind, 0.0) for r in samples), 4)
              for kind in {k for r in samples for k in r}}
        for way, samples in rounds.items()
    }
    result: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "workload": {"jobs": args.jobs, "pages_per_job": PAGES, "rounds": args.rounds},
        "rounds": rounds, "median_per_job": medians,
        "ratio_to_raw": {w: round(m["all"] / medians["raw"]["all"], 3) for w, m in medians.items()}
        if "raw" in medians else {},
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    kinds = sorted({k for m in medians.values() for k in m if k != "all"},
                   key=lambda k: -max(m.get(k, 0.0) for m in medians.values()))
    print(f"CPU-seconds per job (median of {args.rounds} rounds of {args.jobs} jobs x {PAGES} pages), {result['date']}")
    print(f"{'process':34s}" + "".join(f"{w:>20s}" for w in ways))
    for kind in [*kinds, "all"]:
        print(f"{kind[:34]:34s}" + "".join(f"{medians[w].get(kind, 0.0):20.3f}" for w in ways))
    if result["ratio_to_raw"]:
        print(f"{'ratio to raw':34s}" + "".join(f"{result['ratio_to_raw'][w]:20.3f}" for w in ways))


if __name__ == "__main__":
    main()
