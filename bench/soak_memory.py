"""Worker memory over a long soak: PSS per process group every ``--every`` runs.

    .venv/bin/python bench/soak_memory.py                      # 10,000 runs, a sample every 500
    .venv/bin/python bench/soak_memory.py --runs 500 --every 100
    .venv/bin/python bench/soak_memory.py --set browser_max_contexts=250 --json
    .venv/bin/python bench/soak_memory.py --runs 2000 --diagnose   # + tracemalloc / gc counts per child

One real ``browserq worker --concurrency 2`` (prefork) on a Redis broker with a queue of its own
and a scratch PostgreSQL database (store and result backend), as a deployment runs it. The script
serves the demo site on 127.0.0.1 and sends the runs in batches of ``--every`` (``apply_async`` of
``run_template``, a two-step template: open the quotes page, extract its 10 records), waits for
every result (each must be ``completed`` with 10 records), then, with the worker idle between
batches, reads ``/proc/<pid>/smaps_rollup`` of every process under the worker and sums the PSS
(shared pages split between the processes sharing them) by group: **main** (Celery's parent
process), **children** (the prefork pool processes), **drivers** (each child's Playwright node
driver) and **chromium** (every browser, renderer, GPU/utility process). Printed: a row per sample,
then the table of MiB per group at each checkpoint and the slope in KB per run of each group over
the last half of the samples (a least-squares line). ``--samples-to FILE`` appends each sample as a
JSON line as it is taken, so a soak stopped early (SIGTERM: the worker is stopped, the scratch
database dropped) still has its curve.

``--diagnose`` starts the worker with a ``sitecustomize`` (this script's ``_soak_diag`` dir on
``PYTHONPATH``) that turns on ``tracemalloc`` in every process and, at each checkpoint, makes each
one write its top allocation sites and its live-object counts by type (``gc.get_objects()``) to the
output directory: that is where growth in Python is found. It slows the worker; don't quote its
throughput.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from pool import TEMPLATE, descendants, pss_mb  # the same small listing run as pool.py's
from scrape_and_form import database
from throughput import (
    DEFAULT_BROKER,
    DEFAULT_DB,
    browserq_env,
    progress,
    start_worker,
    worker_settings,
)

from browserq.demo.site import DemoSite

HERE = Path(__file__).resolve().parent
GROUPS = ("main", "children", "drivers", "chromium")
RESULT_TIMEOUT_S = 1800.0


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def is_driver(pid: int) -> bool:
    line = cmdline(pid)
    return b"playwright/driver" in line or Path(line.split(b"\0")[0].decode(errors="replace")).name == "node"


def ppid_of(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def sample(main: int) -> dict[str, Any]:
    """PSS (MiB) of the worker's process tree by group, with the process counts."""
    pss = dict.fromkeys(GROUPS, 0.0)
    count = dict.fromkeys(GROUPS, 0)
    pss["main"], count["main"] = pss_mb(main), 1
    for pid in descendants(main)[1:]:
        if ppid_of(pid) == main and b"python" in cmdline(pid):
            group = "children"
        elif is_driver(pid):
            group = "drivers"
        else:
            group = "chromium"  # the browsers and every helper process they start
        pss[group] += pss_mb(pid)
        count[group] += 1
    return {"pss_mib": pss, "processes": count, "total_mib": sum(pss.values())}


def send_batch(url: str, runs: int, queue: str) -> None:
    """``runs`` runs sent at once, every result awaited and checked."""
    from browserq import run_template

    results = [run_template.apply_async(args=["bench_small"], kwargs={"params": {"url": url}}, queue=queue)
               for _ in range(runs)]
    deadline = time.monotonic() + RESULT_TIMEOUT_S
    for result in results:
        value = result.get(timeout=max(1.0, deadline - time.monotonic()), propagate=True)
        result.forget()  # the producer keeps no result (this process is not what is measured)
        if value.get("status") != "completed" or len(value["outputs"]["quotes"]) != 10:
            raise AssertionError(f"run {result.id}: {value.get('status')} {value.get('error')}")


def slope_kb_per_run(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of MiB against runs, in KB (1000 B) per run."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    return sxy / sxx * 2**20 / 1000 if sxx else 0.0


def diag_request(out: Path, tag: int) -> None:
    """Ask every process under the worker (via the trigger file) for its tracemalloc/gc dump."""
    (out / "trigger").write_text(str(tag))
    time.sleep(15)  # each process polls the trigger every 2 s, then dumps (slow with tracemalloc on)


def soak(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bq-soak-"))
    templates = tmp / "templates"
    templates.mkdir()
    (templates / "bench_small.yaml").write_text(TEMPLATE)
    samples: list[dict[str, Any]] = []
    with DemoSite() as site, database(args.db, tmp) as db_url:
        env = browserq_env(db_url, args.broker, f"bq_soak_{uuid.uuid4().hex[:8]}", tmp / "artifacts")
        env["BROWSERQ_TEMPLATES_DIR"] = str(templates)
        env.update(worker_settings(args.set))
        os.environ.update(env)  # this process is the producer, with the worker's settings
        from browserq import celery_app
        from browserq.settings import reset_settings_cache

        reset_settings_cache()
        celery_app.reset_producer_cache()
        worker_env, path = dict(env), ()
        if args.diagnose:
            (tmp / "diag").mkdir()
            worker_env["SOAK_DIAG_DIR"] = str(tmp / "diag")
            path = (str(HERE / "_soak_diag"),)
        worker = start_worker("soak", worker_env, args.concurrency, "prefork", tmp, path)
        url = f"{site.url}/quotes/"
        try:
            send_batch(url, 2 * args.concurrency, env["BROWSERQ_QUEUE"])  # every child has its browser
            started = time.perf_counter()
            done = 0
            while True:
                if args.diagnose:
                    diag_request(tmp / "diag", done)
                one = {"runs": done, "seconds": round(time.perf_counter() - started, 1), **sample(worker.proc.pid),
                       "load_1m": os.getloadavg()[0]}
                samples.append(one)
                if args.samples_to:
                    with Path(args.samples_to).open("a") as out:
                        out.write(json.dumps(one) + "\n")
                p = one["pss_mib"]
                progress(f"runs {done:6d}  {one['seconds']:7.0f} s  total {one['total_mib']:7.1f} MiB  main "
                         f"{p['main']:6.1f}  children {p['children']:6.1f}  drivers {p['drivers']:6.1f}  chromium "
                         f"{p['chromium']:7.1f} ({one['processes']['chromium']} procs)  load {one['load_1m']:.1f}")
                if done >= args.runs:
                    break
                batch = min(args.every, args.runs - done)
                send_batch(url, batch, env["BROWSERQ_QUEUE"])
                done += batch
        finally:
            worker.stop()
        elapsed = time.perf_counter() - started
    half = [s for s in samples if s["runs"] >= samples[-1]["runs"] / 2]
    slopes = {g: slope_kb_per_run([(s["runs"], s["pss_mib"][g]) for s in half]) for g in GROUPS}
    slopes["total"] = slope_kb_per_run([(s["runs"], s["total_mib"]) for s in half])
    return {"runs": args.runs, "every": args.every, "concurrency": args.concurrency, "seconds": elapsed,
            "runs_per_s": args.runs / elapsed, "settings": args.set, "samples": samples,
            "slope_kb_per_run_last_half": slopes, "diag_dir": str(tmp / "diag") if args.diagnose else None,
            "worker_log": str(tmp / "worker-soak.log")}


def print_report(result: dict[str, Any]) -> None:
    print(f"\nPSS (MiB) of `browserq worker -c {result['concurrency']}` every {result['every']} runs "
          f"({result['runs_per_s']:.2f} runs/s)")
    print("| runs | main | children | drivers | chromium | total |")
    print("|---:|---:|---:|---:|---:|---:|")
    for s in result["samples"]:
        p = s["pss_mib"]
        print(f"| {s['runs']} | {p['main']:.1f} | {p['children']:.1f} | {p['drivers']:.1f} | "
              f"{p['chromium']:.1f} | {s['total_mib']:.1f} |")
    slopes = result["slope_kb_per_run_last_half"]
    print("slope over the last half, KB per run: " + ", ".join(f"{g} {v:+.1f}" for g, v in slopes.items()))
    if result["diag_dir"]:
        print(f"tracemalloc/gc dumps: {result['diag_dir']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--every", type=int, default=500, help="sample every this many runs (the batch size)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--db", default=DEFAULT_DB, help="a PostgreSQL URL (a scratch database is made on it)")
    parser.add_argument("--broker", default=DEFAULT_BROKER)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a worker setting, e.g. browser_max_contexts=250 (BROWSERQ_KEY)")
    parser.add_argument("--diagnose", action="store_true", help="tracemalloc + gc counts in every worker process")
    parser.add_argument("--samples-to", metavar="FILE", help="also append each sample to FILE as a JSON line")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the worker and the scratch database go too
    result = soak(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
