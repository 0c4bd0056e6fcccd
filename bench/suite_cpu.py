"""Where the test-suite's time goes: wall and CPU per test, per file and per directory.

Why: on a 2-core machine the suite is bound by CPU, not by waiting — 4 xdist workers kept both
cores 97 % busy (2,690 CPU-seconds in 1,393 s) — so reordering tests cannot make it much
shorter; only spending less CPU can. This runs pytest (the arguments after ``--``; default the
whole suite with ``-n 4 --dist worksteal``) with ``bench/suite_cpu/cpu_profile.py``, which counts
each test's CPU in a cgroup per xdist worker (Chromium, drivers, Celery workers and CLI
subprocesses included), and the whole machine's busy CPU from ``/proc/stat`` around it, then
prints the groups that cost the most.

    .venv/bin/python bench/suite_cpu.py                          # the whole suite, 4 workers
    .venv/bin/python bench/suite_cpu.py --depth 3 -- tests/cli -n 2   # per file, one directory
    .venv/bin/python bench/suite_cpu.py --read DIR                # the tables of an earlier run
    .venv/bin/python bench/suite_cpu.py --by-process              # and CPU by kind of process

Counted per test exactly only with a writable cgroup (root here); elsewhere a test's CPU is its
process's and its reaped children's, which misses Chromium. Nothing is asserted: this measures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from cpu_groups import SUITE_CPU_PREFIX, remove_groups
from proc_accounting import ProcessCpu

REPO = Path(__file__).resolve().parents[1]
PLUGIN_DIR = Path(__file__).resolve().parent / "suite_cpu"
DEFAULT_PYTEST = ["-n", "4", "--dist", "worksteal", "-q", "-p", "no:cacheprovider"]


def busy_cpu_seconds() -> float:
    """The machine's CPU-seconds not idle since boot (``/proc/stat``)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    return (sum(fields) - fields[3] - fields[4]) / ticks


def run_suite(pytest_args: list[str], folder: Path, by_process: bool = False) -> dict[str, Any]:
    """Run pytest with the plugin; with ``by_process`` also split the machine's CPU by kind of
    process (:class:`proc_accounting.ProcessCpu`: Chromium's processes, drivers, Python roles)."""
    env = {**os.environ, "SUITE_CPU_DIR": str(folder),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PLUGIN_DIR), str(PLUGIN_DIR.parent),
                                                       os.environ.get("PYTHONPATH")]))}
    # As scripts/test.sh: with PYTHONDONTWRITEBYTECODE set every process the suite starts compiles
    # what it imports again (a venv installed by uv holds no bytecode): 2,483 CPU-s against ~1,700.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", "browserq", "tests"], cwd=REPO, env=env,
                   stdout=subprocess.DEVNULL, check=True)
    busy, began = busy_cpu_seconds(), time.monotonic()
    with ProcessCpu(sample_s=0.2) if by_process else nullcontext() as processes:
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "cpu_profile", *pytest_args], cwd=REPO, env=env)
    remove_cgroups()
    run: dict[str, Any] = {"wall_s": time.monotonic() - began, "machine_busy_cpu_s": busy_cpu_seconds() - busy,
                           "exit_code": done.returncode}
    if processes is not None:
        run["by_process"] = {kind: round(s, 1) for kind, s in processes.by_kind().items() if s >= 0.5}
        run["processes"] = {kind: n for kind, n in processes.count_by_kind().items() if kind in run["by_process"]}
        (folder / "by_process.json").write_text(json.dumps({k: run[k] for k in ("by_process", "processes")}, indent=2))
    return run


def remove_cgroups() -> None:
    """The plugin's cgroups, once their processes are gone (a leftover straggler keeps its own)."""
    for group in remove_groups(SUITE_CPU_PREFIX):
        print(f"left in place (still has processes): {group}", file=sys.stderr)


def read_tests(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.open(encoding="utf-8")]


def group_of(nodeid: str, depth: int) -> str:
    return "/".join(nodeid.split("::")[0].split("/")[:depth])


def summarize(tests: list[dict[str, Any]], depth: int) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = defaultdict(lambda: {"tests": 0, "wall_s": 0.0, "cpu_s": 0.0})
    for test in tests:
        group = groups[group_of(test["id"], depth)]
        group["tests"] += 1
        group["wall_s"] += test["wall"]
        group["cpu_s"] += test["cpu"]
    rows = [{"group": name, **figures} for name, figures in groups.items()]
    return sorted(rows, key=lambda row: -row["cpu_s"])


def timeline(tests: list[dict[str, Any]], bucket_s: float = 60.0) -> list[dict[str, Any]]:
    """The run minute by minute, from each test's start, wall and CPU (a test's CPU spread evenly
    over its time): cores the tests kept busy, and how many of the workers sat in a test using
    less than a quarter of a core — the waiting that more CPU would not shorten."""
    timed = [t for t in tests if "started" in t]
    if not timed:
        return []
    origin = min(t["started"] for t in timed)
    end = max(t["started"] + t["wall"] for t in timed)
    rows = []
    for index in range(int((end - origin) // bucket_s) + 1):
        low, high = origin + index * bucket_s, origin + (index + 1) * bucket_s
        cores = waiting = 0.0
        for test in timed:
            overlap = min(high, test["started"] + test["wall"]) - max(low, test["started"])
            if overlap <= 0 or test["wall"] <= 0:
                continue
            rate = test["cpu"] / test["wall"]
            cores += rate * overlap / bucket_s
            waiting += overlap / bucket_s if rate < 0.25 else 0.0
        rows.append({"from_s": index * bucket_s, "cores": cores, "workers_waiting": waiting})
    return rows


def print_report(tests: list[dict[str, Any]], run: dict[str, Any] | None, depth: int, top: int) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    total_cpu = sum(t["cpu"] for t in tests)
    sources = sorted({t.get("source", "?") for t in tests})
    if run is not None and "wall_s" in run:
        console.print(f"{len(tests)} tests in {run['wall_s']:.0f} s wall; the machine was busy "
                      f"{run['machine_busy_cpu_s']:.0f} CPU-s ({run['machine_busy_cpu_s'] / run['wall_s']:.2f} "
                      f"cores on average), {total_cpu:.0f} of them counted to tests (counter: {', '.join(sources)})")
    table = Table(title=f"CPU by group (depth {depth}), most first")
    for column in ("group", "tests", "wall s", "CPU s", "CPU s / test", "share"):
        table.add_column(column, justify="left" if column == "group" else "right")
    for row in summarize(tests, depth)[:top]:
        table.add_row(row["group"], str(row["tests"]), f"{row['wall_s']:.0f}", f"{row['cpu_s']:.0f}",
                      f"{row['cpu_s'] / row['tests']:.1f}", f"{row['cpu_s'] / max(total_cpu, 1e-9):.1%}")
    console.print(table)
    tests_table = Table(title=f"the {top} costliest tests")
    for column in ("test", "wall s", "CPU s"):
        tests_table.add_column(column, justify="left" if column == "test" else "right", overflow="fold")
    for test in sorted(tests, key=lambda t: -t["cpu"])[:top]:
        tests_table.add_row(escape(test["id"]), f"{test['wall']:.1f}", f"{test['cpu']:.1f}")
    console.print(tests_table)
    if run is not None and run.get("by_process"):
        kinds = Table(title="CPU by kind of process, the whole machine (--by-process)")
        for column in ("process", "CPU s", "share", "processes", "CPU s each"):
            kinds.add_column(column, justify="left" if column == "process" else "right")
        total = sum(run["by_process"].values())
        counts = run.get("processes", {})
        for kind, seconds in run["by_process"].items():
            count = counts.get(kind)
            kinds.add_row(escape(kind), f"{seconds:.0f}", f"{seconds / total:.1%}", str(count or "?"),
                          f"{seconds / count:.2f}" if count else "?")
        console.print(kinds)
    if rows := timeline(tests):
        load = Table(title="minute by minute: cores the tests kept busy, workers waiting in a test (< 0.25 core)")
        for column in ("from s", "cores", "workers waiting"):
            load.add_column(column, justify="right")
        for row in rows:
            load.add_row(f"{row['from_s']:.0f}", f"{row['cores']:.2f}", f"{row['workers_waiting']:.1f}")
        console.print(load)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depth", type=int, default=2, help="path parts per group (2: directory, 3: file)")
    parser.add_argument("--top", type=int, default=25, help="rows per table (default 25)")
    parser.add_argument("--read", type=Path, help="print the tables of an earlier run's folder, run nothing")
    parser.add_argument("--keep", type=Path, help="write the per-test lines to this folder (kept)")
    parser.add_argument("--json", action="store_true", help="print the groups as JSON")
    parser.add_argument("--by-process", action="store_true",
                        help="also split the machine's CPU by kind of process (process accounting: root)")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments")
    args = parser.parse_args()
    run = None
    if args.read is not None:
        folder = args.read
    else:
        folder = args.keep or Path(tempfile.mkdtemp(prefix="suite-cpu-"))
        folder.mkdir(parents=True, exist_ok=True)
        run = run_suite(args.pytest_args or DEFAULT_PYTEST, folder, args.by_process)
        print(f"per-test lines: {folder}", file=sys.stderr)
    tests = read_tests(folder)
    if run is None and (folder / "by_process.json").exists():
        saved = json.loads((folder / "by_process.json").read_text())
        run = saved if "by_process" in saved else {"by_process": saved}  # an older run's file: kinds only
    if args.json:
        print(json.dumps({"run": run, "groups": summarize(tests, args.depth)}, indent=2))
    else:
        print_report(tests, run, args.depth, args.top)


if __name__ == "__main__":
    main()
