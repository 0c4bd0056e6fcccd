"""How many of browserq's files one run's id passes through, from ``run_template.delay()`` to the
run's last write — for one or more revisions, side by side.

Why: "follow one run id" is how a newcomer reads the code; every file on that path is one more to
open. Issue 24 counted 33 and set ≤ 15 as the bar. This counts it the same way for every revision:

* the producer (this process, for a revision run in a child) calls ``run_template.delay()`` of
  ``--template`` against the demo site: ``login_form`` by default (log in, fill and send a form —
  a screenshot, a secret param) or ``quotes``; a real ``browserq worker --pool threads -c 1`` runs it on Redis with
  an SQLite store; the worker is stopped once the run's result is in;
* both processes carry a ``sys.setprofile`` hook (``bench/run_path/tracer.py``; in the worker through
  ``bench/run_path/sitecustomize.py``) that notes, for every call into a file under ``browserq/``, the
  run ids among its arguments and locals (the id as a string, or as the ``run_id`` of a dict or
  dataclass it is handed);
* **on a write's path** (the headline): a file counts when it is on the logical call path from an
  entry point to an SQL write (INSERT/UPDATE/DELETE) whose parameters carry the run's id. The path
  is the call stack continued across asyncio tasks and ``asyncio.to_thread`` (both copy the context
  they start from; the hook keeps the path in a context variable), so the runner → journal → store
  chain is followed although its store calls run in another thread;
* **handed the id**: a file counts when the run's id was seen in one of its calls (an argument or a
  local, as a string or as the ``run_id`` of a dict or dataclass): this also counts the leaves a run
  id passes by (log scrubbing, redaction, progress, events).

    .venv/bin/python bench/run_path_files.py                      # this working tree
    .venv/bin/python bench/run_path_files.py --rev abff617 --rev .  # before and after, side by side
    .venv/bin/python bench/run_path_files.py --list               # and name the files
    .venv/bin/python bench/run_path_files.py --list --functions   # name the functions handed the id

Which writes a run makes depends on its length: a quick run's steps are all written in its
finish's batch, while a run that outlives the journal's flush interval (``journal_flush_ms``) or
the checkpoint interval is also written from the runner. ``--every-write`` sets both to 0, so
every write the runner can make is made (the path no longer depends on the machine's speed):
report both figures.

Needs Redis at ``--broker`` (default redis://127.0.0.1:6379/0; a queue of its own is used) and a
Chromium, as the tests do. Nothing is asserted: this measures.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

from cryptography.fernet import Fernet

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TRACE_SITE = HERE / "run_path"


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def start_worker(tree: Path, env: dict[str, str], trace: Path, log: Path) -> subprocess.Popen[bytes]:
    worker_env = {**env, "PYTHONPATH": os.pathsep.join([str(TRACE_SITE), str(tree)]),
                  "BROWSERQ_RUN_PATH_TRACE": str(trace), "BROWSERQ_RUN_PATH_ROOT": str(tree / "browserq"),
                  "BROWSERQ_RUN_PATH_FUNCTIONS": os.environ.get("BROWSERQ_RUN_PATH_FUNCTIONS", "")}
    argv = [sys.executable, "-m", "browserq.cli", "worker", "--pool", "threads", "-c", "1",
            "-n", f"{env['BROWSERQ_QUEUE']}@%h", "--without-gossip", "--without-mingle"]
    with log.open("ab") as handle:
        proc = subprocess.Popen(argv, env=worker_env, cwd=tree, stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + 90
    while "ready." not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"run_path_files: the worker did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    return proc


Files = dict[str, list[str]]  # file under browserq/ → the processes it was seen in


def template_params(template: str, site_url: str) -> dict[str, object]:
    if template == "quotes":
        return {"start_url": f"{site_url}/quotes/", "max_pages": 2}
    from browserq.demo.site import DEMO_PASSWORD

    return {"base_url": site_url, "password": DEMO_PASSWORD}


def measure_here(broker: str, template: str) -> dict[str, Files]:
    """One run traced in this process (the producer) and in a worker: per measure, file → sides."""
    tree = Path(__import__("browserq").__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="browserq-run-path-") as scratch:
        tmp = Path(scratch)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERQ_")}
        env.update({
            "BROWSERQ_BROKER_URL": broker,
            "BROWSERQ_DATABASE_URL": f"sqlite:///{tmp / 'runs.db'}",
            "BROWSERQ_TEMPLATES_DIR": str(tree / "templates"),
            "BROWSERQ_ARTIFACTS_DIR": str(tmp / "artifacts"),
            "BROWSERQ_QUEUE": f"runpath-{uuid.uuid4().hex[:8]}",
            "BROWSERQ_SECRET_KEY": Fernet.generate_key().decode(),  # login_form takes a secret param
        })
        if os.environ.get("RUN_PATH_EVERY_WRITE"):  # every record written as it happens (--every-write)
            env.update({"BROWSERQ_JOURNAL_FLUSH_MS": "0", "BROWSERQ_CHECKPOINT_INTERVAL_MS": "0"})
        os.environ.update(env)
        subprocess.run([sys.executable, "-m", "browserq.cli", "db", "upgrade"], env=env, cwd=tree,
                       check=True, capture_output=True)
        worker_trace, log = tmp / "worker.json", tmp / "worker.log"
        worker = start_worker(tree, env, worker_trace, log)
        sys.path.insert(0, str(TRACE_SITE))
        from tracer import Tracers

        from browserq import run_template
        from browserq.demo.site import DemoSite

        producer = Tracers(str(tree / "browserq"), str(tmp / "producer.json"))
        try:
            with DemoSite() as site:
                sys.setprofile(producer.profile)
                result = run_template.delay(template, params=template_params(template, site.url))
                sys.setprofile(None)
                result.get(timeout=180, propagate=False)
                run_id = result.id
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
        producer.dump()
        found: dict[str, Files] = {}
        for measure, suffix in (("writes", ".writes.json"), ("handed", ".json")):
            files: Files = defaultdict(list)
            for side in ("producer", "worker"):
                trace = tmp / f"{side}{suffix}"
                for name, ids in (json.loads(trace.read_text()) if trace.exists() else {}).items():
                    if run_id in ids:
                        files[name].append(side)
            found[measure] = dict(sorted(files.items()))
        return found


def measure_revision(label: str, broker: str, template: str, scratch: Path) -> tuple[str, dict[str, Files]]:
    """Check ``label`` out (``.`` is this tree) and measure it in a child whose imports are that tree's."""
    if label == ".":
        tree, commit = REPO, git("rev-parse", "--short", "HEAD")
    else:
        commit = git("rev-parse", "--short", label)
        tree = scratch / commit
        git("worktree", "add", "--detach", "--quiet", str(tree), commit)
    try:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        done = subprocess.run([sys.executable, __file__, "--here", "--broker", broker, "--template", template], env=env,
                              capture_output=True, text=True, cwd=tree)
        if done.returncode != 0:
            raise SystemExit(f"run_path_files: {label} failed:\n{done.stderr[-3000:]}")
        return commit, json.loads(done.stdout)
    finally:
        if tree != REPO:
            git("worktree", "remove", "--force", str(tree))


def report(results: list[tuple[str, str, dict[str, Files]]], listing: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title="browserq files one run's id passes through (.delay() → last write)")
    for column in ("revision", "on a write's path", "producer / worker", "handed the id"):
        table.add_column(column, justify="left" if column == "revision" else "right")
    for label, commit, found in results:
        writes = found["writes"]
        table.add_row(f"{label} ({commit})", str(len(writes)),
                      f"{sum('producer' in s for s in writes.values())} / {sum('worker' in s for s in writes.values())}",
                      str(len(found["handed"])))
    console.print(table)
    if listing:
        for label, commit, found in results:
            console.print(f"\n[bold]{label} ({commit})[/bold]  W: on a write's path  H: handed the id")
            for name in sorted({**found["writes"], **found["handed"]}):
                marks = ("W" if name in found["writes"] else " ") + ("H" if name in found["handed"] else " ")
                sides = sorted({*found["writes"].get(name, []), *found["handed"].get(name, [])})
                console.print(f"  {marks}  {name}  [dim]{'+'.join(sides)}[/dim]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", action="append", help="a git revision, or . for this tree (repeatable)")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/0", help="Redis broker URL")
    parser.add_argument("--template", choices=["login_form", "quotes"], default="login_form",
                        help="the run to follow (default login_form: a form sent, a screenshot, a secret)")
    parser.add_argument("--list", action="store_true", help="name every file")
    parser.add_argument("--functions", action="store_true",
                        help="count file:function pairs instead of files (with --list: who is handed the id)")
    parser.add_argument("--every-write", action="store_true",
                        help="journal flush and checkpoint intervals 0: the runner writes every step itself")
    parser.add_argument("--json", action="store_true", help="print the files per revision as JSON")
    parser.add_argument("--here", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.here:
        print(json.dumps(measure_here(args.broker, args.template)))
        return
    if args.functions:
        os.environ["BROWSERQ_RUN_PATH_FUNCTIONS"] = "1"
    if args.every_write:
        os.environ["RUN_PATH_EVERY_WRITE"] = "1"
    results = []
    with tempfile.TemporaryDirectory(prefix="browserq-run-path-revs-") as scratch:
        for label in args.rev or ["."]:
            print(f"measuring {label} …", file=sys.stderr)
            commit, files = measure_revision(label, args.broker, args.template, Path(scratch))
            results.append((label, commit, files))
    if args.json:
        print(json.dumps({label: {"commit": commit, "files": files} for label, commit, files in results},
                         indent=2))
    else:
        report(results, args.list)


if __name__ == "__main__":
    main()
