"""Benchmark: what live progress (the ``PROGRESS`` state, browserq.tasks.progress) costs a worker.

Two real ``celery worker`` processes (prefork, ``--concurrency`` each) on one Redis broker, a
scratch PostgreSQL database as store and result backend (browserq's default backend:
``db+DATABASE_URL``), the demo site served by this script:

* ``on``: browserq as shipped, every step publishes its progress (``--set progress_interval_ms=N``
  to throttle it);
* ``off``: the same worker with the progress observer left out of ``worker_observers`` (this
  module is the worker's app, ``-A progress:app``: see :func:`__getattr__`).

The workload: ``--runs`` runs (default 10) of a 12-step template (a navigation and 11 ``get``
steps: progress is paid per step, so short steps show it most) sent at once with ``.delay()``
and awaited. Both workers are warmed up (the warm-up also checks that ``on`` publishes PROGRESS
and ``off`` does not), then measured in ``--rounds`` interleaved rounds (default 3, the order
alternating); reported: runs/s and ms per run (wall time / runs x concurrency), medians per way,
and the ratio off/on. No timing asserts.

    .venv/bin/python bench/progress.py [--runs 10] [--rounds 3] [--concurrency 2] [--json]
        [--db postgresql+psycopg://postgres@127.0.0.1:5432/test] [--broker redis://127.0.0.1:6379/12]
        [--set progress_interval_ms=250]

Progress goes to stderr; with ``--json`` only the JSON goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
DEFAULT_DB = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
DEFAULT_BROKER = "redis://127.0.0.1:6379/12"  # the bench's Redis database (none of the suites uses 12)
STEPS = 12
TEMPLATE = "name: progress_bench\nversion: 1.0.0\nparams:\n  base_url: {type: url, required: true}\n" \
    "settings: {trace: off, run_retries: 0}\nsteps:\n" \
    "  - {action: navigate, url: \"${base_url}/quotes/\"}\n" + \
    "".join(f"  - {{action: get, what: {what}, selector: \".quote\", into: v{i}}}\n"
            for i, what in enumerate(["count", "text"] * 5 + ["count"]))
WAYS = ("on", "off")


def __getattr__(name: str) -> Any:
    """``celery -A progress:app`` (the ``off`` worker): browserq's app, its worker processes built
    without the progress observer. Lazy, so that importing this module as a script costs nothing."""
    if name != "app":
        raise AttributeError(name)
    import browserq.tasks.worker as worker
    from browserq.celery_app import app
    from browserq.tasks.progress import ProgressPublisher

    with_progress = worker.worker_observers
    worker.worker_observers = lambda settings: [  # type: ignore[assignment]
        o for o in with_progress(settings) if not isinstance(o, ProgressPublisher)]
    return app


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def start_worker(way: str, env: dict[str, str], concurrency: int, tmp: Path) -> Any:
    from throughput import Worker

    app = "browserq.celery_app:app" if way == "on" else "progress:app"
    queue = env["BROWSERQ_QUEUE"]
    argv = [sys.executable, "-m", "celery", "-A", app, "worker", "--pool", "prefork", "--concurrency",
            str(concurrency), "-Q", f"{queue},{queue}.sweep", "-E", "-n", f"{queue}@%h",
            "--without-gossip", "--without-mingle", "--loglevel", "INFO"]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERQ_")}
    full_env.update(env, PYTHONPATH=f"{REPO}{os.pathsep}{BENCH}")
    log = tmp / f"worker-{way}.log"
    import subprocess

    with log.open("ab") as handle:
        proc = subprocess.Popen(argv, env=full_env, stdout=handle, stderr=subprocess.STDOUT, cwd=REPO,
                                start_new_session=True)
    worker = Worker(way, queue, log, proc)
    deadline = time.monotonic() + 120
    while worker.log_tail(10**7).count("runtime started") < concurrency:
        if proc.poll() is not None or time.monotonic() > deadline:
            worker.stop(5)
            raise RuntimeError(f"worker {way} did not start ({proc.returncode}):\n{worker.log_tail()}")
        time.sleep(0.2)
    say(f"worker {way} ready (queue {queue})")
    return worker


def send_and_wait(base_url: str, runs: int, queue: str) -> float:
    """``runs`` runs sent at once to ``queue`` and awaited (each checked); the wall time in s."""
    from browserq import run_template

    started = time.perf_counter()
    results = [run_template.apply_async(args=["progress_bench"], kwargs={"params": {"base_url": base_url}},
                                        queue=queue) for _ in range(runs)]
    for result in results:
        value = result.get(timeout=300)
        if value["status"] != "completed" or value["outputs"]["v0"] != 10:
            raise AssertionError(f"run {result.id}: {value}")
    return time.perf_counter() - started


def states_seen(base_url: str, queue: str) -> set[str]:
    """The task states a poller sees during one run (the warm-up's check of both ways)."""
    from browserq import run_template

    result = run_template.apply_async(args=["progress_bench"], kwargs={"params": {"base_url": base_url}},
                                      queue=queue)
    seen = set()
    while not result.ready():
        seen.add(result.state)
        time.sleep(0.02)
    result.get(timeout=60)
    return seen


def run(args: argparse.Namespace) -> dict[str, Any]:
    from scrape_and_form import browserq_revision, database
    from throughput import worker_settings

    from browserq import celery_app
    from browserq.demo.site import DemoSite
    from browserq.logs import configure_logging
    from browserq.settings import get_settings, reset_settings_cache

    load_start = os.getloadavg()[0]
    samples: dict[str, list[float]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory(prefix="browserq-progress-") as tmp_name, DemoSite() as site:
        tmp = Path(tmp_name)
        (tmp / "templates").mkdir()
        (tmp / "templates" / "progress_bench.yaml").write_text(TEMPLATE)
        with database(args.db, tmp) as db_url:
            from cryptography.fernet import Fernet

            base = f"bq_bench_progress_{uuid.uuid4().hex[:6]}"
            env = {"BROWSERQ_BROKER_URL": args.broker, "BROWSERQ_DATABASE_URL": db_url,
                   "BROWSERQ_TEMPLATES_DIR": str(tmp / "templates"), "BROWSERQ_ARTIFACTS_DIR": str(tmp / "artifacts"),
                   "BROWSERQ_QUEUE": base, "BROWSERQ_SECRET_KEY": Fernet.generate_key().decode(),
                   **worker_settings(args.set)}
            os.environ.update(env)  # this process is the producer, with the workers' settings
            reset_settings_cache()
            configure_logging(get_settings().model_copy(update={"log_level": "WARNING"}))  # no line per run
            celery_app.reset_producer_cache()
            workers = {}
            try:
                for way in WAYS:
                    workers[way] = start_worker(way, {**env, "BROWSERQ_QUEUE": f"{base}_{way}"},
                                                args.concurrency, tmp)
                checks = {way: sorted(states_seen(site.url, workers[way].queue)) for way in WAYS}
                say(f"states a poller saw: {checks}")
                if "PROGRESS" not in checks["on"] or "PROGRESS" in checks["off"]:
                    raise AssertionError(f"the ways are not what they claim: {checks}")
                for way in WAYS:  # warm-up: every child has run
                    send_and_wait(site.url, 2 * args.concurrency, workers[way].queue)
                for r in range(args.rounds):
                    for way in (WAYS if r % 2 == 0 else WAYS[::-1]):
                        elapsed = send_and_wait(site.url, args.runs, workers[way].queue)
                        samples[way].append(args.runs / elapsed)
                        say(f"round {r + 1}/{args.rounds}: {way:<3} {args.runs / elapsed:6.2f} runs/s "
                            f"({elapsed:5.1f} s)  load {os.getloadavg()[0]:.1f}")
            finally:
                for worker in workers.values():
                    worker.stop()
    ways = {}
    for way, runs_per_s in samples.items():
        median = statistics.median(runs_per_s)
        ways[way] = {"runs_per_s_median": round(median, 3),
                     "ms_per_run_median": round(1000 * args.concurrency / median, 1),
                     "runs_per_s": [round(v, 3) for v in runs_per_s]}
    return {
        "bench": "progress", "revision": browserq_revision(), "runs": args.runs, "rounds": args.rounds,
        "concurrency": args.concurrency, "steps_per_run": STEPS, "settings": args.set,
        "load_1m": {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)},
        "cpus": os.cpu_count(), "ways": ways,
        "off_over_on": round(ways["off"]["runs_per_s_median"] / ways["on"]["runs_per_s_median"], 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per way and round (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes per way (default 2)")
    parser.add_argument("--db", default=DEFAULT_DB, help=f"PostgreSQL server URL (default {DEFAULT_DB})")
    parser.add_argument("--broker", default=DEFAULT_BROKER, help=f"Redis broker URL (default {DEFAULT_BROKER})")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a browserq setting for both workers, e.g. --set progress_interval_ms=250")
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    args = parser.parse_args(argv)
    if min(args.runs, args.rounds, args.concurrency) < 1:
        parser.error("--runs, --rounds and --concurrency must be at least 1")
    sys.path.insert(0, str(BENCH))
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"progress on vs off: {args.runs} runs x {STEPS} steps per round, {args.rounds} rounds, "
          f"prefork --concurrency {args.concurrency} per way, load {result['load_1m']}")
    for way in WAYS:
        w = result["ways"][way]
        print(f"  {way:<3}  {w['runs_per_s_median']:6.2f} runs/s   {w['ms_per_run_median']:7.1f} ms/run   "
              f"(rounds: {w['runs_per_s']})")
    print(f"  off/on (median runs/s): {result['off_over_on']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
