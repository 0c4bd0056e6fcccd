"""Chaos tests: real prefork Celery workers, a real broker and PostgreSQL, faults injected mid-run.

Every test builds a :class:`Cluster` (its own queue, workers, optional beat, log files), submits
``chaos_order`` runs from this process through ``run_template.delay`` and then breaks something:
a worker child, a whole worker, a browser, the broker, the database. Afterwards it reads the
records (``runs``, ``step_attempts``, ``run_transitions``) and the demo site's submissions and
checks that nothing was lost, nothing ran twice, and resumed runs skipped what they had done.

Processes: every worker, beat and everything they start (drivers, Chromium) carries the
environment variable ``CHAOS_TAG=<uuid>`` of its cluster; teardown kills the process groups it
started, then any process still carrying the tag (orphaned browsers), by pid.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from browserq.demo.site import DEMO_PASSWORD, DemoSite
from browserq.runner.checkpoint import parse_path
from browserq.store import Store
from tests.conftest import TEST_SECRET_KEY, producer_env
from tests.support.polling import poll, wait_until
from tests.support.processes import (
    cmdline,
    is_browser_root,
    kill_group,
    parent_of,
    signal_pid,
    tagged_pids,
)
from tests.support.redis import BROKER_DB, redis_url
from tests.support.workers import (
    CELERY,
    browserq_env,
    read_log,
    spawn_logged,
    wait_for_log,
    worker_settings,
)

REDIS_URL = redis_url(BROKER_DB)
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672//"
TEMPLATES = Path(__file__).resolve().parent / "templates"
ORDER_REF = "chaos_order@1"
EVAL_REF = "chaos_eval@1"
FINAL = frozenset({"completed", "failed", "cancelled", "needs_review"})
#: Every step path a completed chaos_order run must have a final record for (in any attempt).
ORDER_PATHS = (
    ["0", "1", "2", "3", "4"]
    + [f"5[{p}].{i}" for p in (1, 2, 3) for i in (0, 1)]
    + ["6", "7", "8", "9", "10"]
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A chaos test may wait on a worker for a while: give each one its own generous timeout."""
    for item in items:
        if item.get_closest_marker("chaos") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(240))


# --- processes -----------------------------------------------------------------------------------
def wait_for(predicate: Any, timeout: float, what: str, interval: float = 0.2) -> Any:
    """:func:`tests.support.polling.wait_until` with the chaos tests' argument names."""
    return wait_until(predicate, timeout, what, interval_s=interval)


@dataclass
class Cluster:
    """Workers, beat and their environment for one test, on its own queue."""

    tmp: Path
    env: dict[str, str]
    queue: str
    tag: str
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)

    # --- start ---------------------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = self.tmp / f"{name}.log"
        proc = spawn_logged([*CELERY, *argv], self.env, log)
        self.procs[name], self.logs[name] = proc, log
        return proc

    def start_worker(self, name: str = "w1", concurrency: int = 2, timeout: float = 90) -> subprocess.Popen:
        """A prefork worker; returns once every child has launched its browser."""
        proc = self._spawn(name, [
            "worker", "--pool", "prefork", "--concurrency", str(concurrency), "-Q", f"{self.queue},{self.queue}.sweep",
            "-n", f"{self.queue}-{name}@%h", "--loglevel", "INFO", "--without-gossip", "--without-mingle",
            "--without-heartbeat",
        ])

        def ready(text: str) -> bool:
            return "ready." in text and text.count("runtime started") >= concurrency

        wait_for_log(proc, self.logs[name], ready, timeout, f"worker {name} to start")
        return proc

    def start_beat(self) -> subprocess.Popen:
        proc = self._spawn("beat", ["beat", "-s", str(self.tmp / "beat-schedule"), "--loglevel", "INFO"])
        wait_for_log(proc, self.logs["beat"], lambda text: "beat: Starting" in text, 30, "beat to start")
        return proc

    # --- look ----------------------------------------------------------------------------------
    def log(self, name: str | None = None) -> str:
        names = [name] if name else list(self.logs)
        return "".join(read_log(self.logs[n]) for n in names)

    def children(self, name: str = "w1") -> set[int]:
        """The worker's live prefork children."""
        parent = self.procs[name].pid
        return {pid for pid in tagged_pids(self.tag) if parent_of(pid) == parent and b"celery" in cmdline(pid)}

    def browser_roots(self) -> dict[int, int]:
        """Chromium browser processes (not its helpers) of this cluster → the worker child above it."""
        children = set().union(*(self.children(n) for n in self.procs if n != "beat"))
        roots = {}
        for pid in tagged_pids(self.tag):
            if not is_browser_root(cmdline(pid)):
                continue
            up = parent_of(pid)
            while up and up > 1 and up not in children:
                up = parent_of(up)
            roots[pid] = up if up in children else 0
        return roots

    # --- stop ----------------------------------------------------------------------------------
    def kill_worker(self, name: str) -> None:
        """SIGKILL the whole worker: its parent and its children (the process group)."""
        kill_group(self.procs[name].pid)
        self.procs[name].wait(10)

    def close(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is None:
                kill_group(proc.pid, signal.SIGTERM if name != "beat" else signal.SIGKILL)
        deadline = time.monotonic() + 15
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            kill_group(proc.pid)  # stragglers of the group, even after a clean exit
            proc.wait(10)
        for _ in range(50):  # orphaned drivers/browsers still carrying our tag
            left = tagged_pids(self.tag)
            if not left:
                break
            for pid in left:
                signal_pid(pid)
            time.sleep(0.1)


@pytest.fixture
def make_cluster(tmp_path: Path, pg_url: str) -> Iterator[Any]:
    """``make_cluster(broker_url, database_url=None, **env)`` → a :class:`Cluster`; torn down after."""
    clusters: list[Cluster] = []

    def make(broker_url: str = REDIS_URL, database_url: str | None = None, **extra: str) -> Cluster:
        db = database_url or pg_url
        queue = f"bq_chaos_{uuid.uuid4().hex[:8]}"
        tag = uuid.uuid4().hex
        env = browserq_env({
            **worker_settings(
                broker_url=broker_url, database_url=db, templates_dir=TEMPLATES, artifacts_dir=tmp_path / "artifacts",
                queue=queue, secret_key=TEST_SECRET_KEY,
            ),
            "BROWSERQ_LEASE_TTL_S": "4",
            "BROWSERQ_SWEEP_INTERVAL_S": "2",
            "BROWSERQ_REQUEUE_AFTER_S": "8",
            "BROWSERQ_RUN_RETRY_BACKOFF_S": "1",
            "BROWSERQ_RUN_RETRY_BACKOFF_MAX_S": "5",
            "BROWSERQ_LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
            "CHAOS_TAG": tag,
        })
        env.update(journal_setting())
        env.update(extra)
        directory = tmp_path / f"cluster{len(clusters)}"
        directory.mkdir()
        cluster = Cluster(tmp=directory, env=env, queue=queue, tag=tag)
        clusters.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in clusters:
            cluster.close()


def journal_setting() -> dict[str, str]:
    """``BROWSERQ_JOURNAL_FLUSH_MS`` of this process, when set, for the workers too (browserq_env
    drops this process's settings): the chaos suite then runs under that journal buffering, e.g.
    ``BROWSERQ_JOURNAL_FLUSH_MS=0`` to compare with the unbuffered journal."""
    value = os.environ.get("BROWSERQ_JOURNAL_FLUSH_MS")
    return {} if value is None else {"BROWSERQ_JOURNAL_FLUSH_MS": value}


@contextmanager
def producer(cluster: Cluster, database_url: str) -> Iterator[None]:
    """Make this test process a browserq producer for the cluster (its broker, queue, database)."""
    # The producer never goes through a proxy: it talks to the database directly.
    with producer_env({**cluster.env, "BROWSERQ_DATABASE_URL": database_url}):
        yield


def submit_orders(demo: DemoSite, n: int) -> list[str]:
    from browserq import run_template

    return [
        run_template.delay(ORDER_REF, params={"base_url": demo.url, "password": DEMO_PASSWORD}).id
        for _ in range(n)
    ]


# --- the records ---------------------------------------------------------------------------------
@pytest.fixture
def store(pg_url: str) -> Iterator[Store]:
    s = Store(pg_url)
    yield s
    s.dispose()


def statuses(store: Store, run_ids: list[str]) -> dict[str, str]:
    with store.engine.connect() as conn:
        rows = conn.execute(sa.text("select id, status from runs where id = any(:ids)"), {"ids": run_ids})
        return dict(rows.all())


def wait_finished(store: Store, run_ids: list[str], timeout: float) -> dict[str, str]:
    """Poll until every run is in a final status or the deadline passes; returns the statuses."""
    return poll(lambda: statuses(store, run_ids), lambda now: all(now.get(r) in FINAL for r in run_ids), timeout)


def running_runs(store: Store, run_ids: list[str], *, mid_run: bool = True) -> list[dict[str, Any]]:
    """Runs executing right now under a lease (and, ``mid_run``, past their first step)."""
    query = """
        select r.id, r.lease_owner, r.takeovers, r.attempt from runs r
        where r.id = any(:ids) and r.status = 'running' and r.lease_owner is not null
          and r.lease_expires_at > now()
    """
    if mid_run:
        query += """ and exists (select 1 from step_attempts s where s.run_id = r.id
                     and s.run_attempt = r.attempt and s.status = 'succeeded')"""
    with store.engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(sa.text(query), {"ids": run_ids})]


def current_step(store: Store, run_id: str, attempt: int) -> str | None:
    """The path of the step the run's attempt recorded last (the one under way, or just done)."""
    query = """select step_path from step_attempts where run_id = :r and run_attempt = :a
               order by id desc limit 1"""
    with store.engine.connect() as conn:
        return conn.execute(sa.text(query), {"r": run_id, "a": attempt}).scalar()


def owner_pid(owner: str) -> int:
    return int(owner.split(":")[1])


def order_key(path: str) -> list[tuple[int, int]]:
    return [(i, p or 0) for i, p in parse_path(path.split("~")[0])]


def resume_violations(store: Store, run_id: str) -> tuple[int, list[str]]:
    """(resumes, problems): a resuming attempt must not record any step at or before its checkpoint."""
    steps = store.steps.steps(run_id)
    problems, resumes = [], 0
    for resume in (s for s in steps if s.action == "resume"):
        resumes += 1
        at = resume.inputs["checkpoint"]
        for s in steps:
            if s.run_attempt == resume.run_attempt and s.action != "resume" and order_key(s.step_path) <= order_key(at):
                problems.append(f"attempt {s.run_attempt} resumed after {at} but recorded {s.step_path}")
    return resumes, problems


def duplicate_step_attempts(store: Store, run_ids: list[str]) -> list[tuple]:
    query = """
        select run_id, run_attempt, step_path, attempt, count(*) from step_attempts
        where run_id = any(:ids) group by run_id, run_attempt, step_path, attempt having count(*) > 1
    """
    with store.engine.connect() as conn:
        return [tuple(row) for row in conn.execute(sa.text(query), {"ids": run_ids})]


@dataclass
class Figures:
    runs: int
    statuses: Counter
    lost: int
    duplicated_side_effects: int
    resumed_from_checkpoint: int
    takeovers: int
    problems: list[str] = field(default_factory=list)

    def verify(self) -> None:
        """Nothing lost or stuck, every run completed or needs_review, no invariant broken."""
        assert self.lost == 0, f"{self.lost} runs not finished in time: {dict(self.statuses)}"
        assert self.statuses["completed"] + self.statuses["needs_review"] == self.runs, dict(self.statuses)
        assert self.duplicated_side_effects == 0 and not self.problems, "\n".join(self.problems)

    def line(self, name: str, **extra: Any) -> str:
        parts = [
            f"runs={self.runs}", f"completed={self.statuses['completed']}",
            f"needs_review={self.statuses['needs_review']}", f"failed={self.statuses['failed']}",
            f"lost={self.lost}", f"duplicated_side_effects={self.duplicated_side_effects}",
            f"resumed_from_checkpoint={self.resumed_from_checkpoint}", f"takeovers={self.takeovers}",
        ]
        parts += [f"{k}={v}" for k, v in extra.items()]
        return f"chaos {name}: " + " ".join(parts)


def check_orders(store: Store, demo: DemoSite, run_ids: list[str], final: dict[str, str]) -> Figures:
    """The invariants every chaos_order test shares: the figures for the summary line, with every
    broken invariant in ``problems`` (``Figures.verify()`` asserts them)."""
    counts = Counter(final.get(r, "missing") for r in run_ids)
    lost = [r for r in run_ids if final.get(r) not in FINAL]
    problems: list[str] = []
    resumed = takeovers = duplicated = 0
    for run_id in run_ids:
        sent = demo.submissions_with(run_id)
        duplicated += max(0, sent - 1)
        run = store.runs.get_run(run_id)
        takeovers += run.takeovers if run else 0
        if final.get(run_id) == "completed":
            if sent != 1:
                problems.append(f"{run_id}: completed with {sent} submissions")
            quotes = [q["text"] for q in (run.outputs or {}).get("quotes", [])]
            if len(quotes) != 30 or len(set(quotes)) != 30:
                problems.append(f"{run_id}: {len(quotes)} quotes ({len(set(quotes))} distinct), expected 30")
            done = {s.step_path for s in store.steps.steps(run_id) if s.status in ("succeeded", "skipped")}
            missing = [p for p in ORDER_PATHS if p not in done]
            if missing:
                problems.append(f"{run_id}: completed without a final record of steps {missing}")
        elif sent > 1:
            problems.append(f"{run_id}: {final.get(run_id)} with {sent} submissions")
        if final.get(run_id) in FINAL:
            open_steps = [s.step_path for s in store.steps.steps(run_id) if s.status == "started"]
            if open_steps:
                problems.append(f"{run_id}: {final.get(run_id)} but steps {open_steps} are still 'started'")
        count, violations = resume_violations(store, run_id)
        resumed += count > 0
        problems += [f"{run_id}: {v}" for v in violations]
    problems += [f"{r}: not finished in time ({final.get(r)})" for r in lost]
    return Figures(len(run_ids), counts, len(lost), duplicated, resumed, takeovers, problems)


@pytest.fixture
def report(capsys: pytest.CaptureFixture[str]) -> Any:
    """Print a summary line past pytest's output capture (so ``-q`` runs show it too)."""

    def emit(line: str) -> None:
        with capsys.disabled():
            print(f"\n{line}", flush=True)

    return emit


@pytest.fixture
def rng() -> random.Random:
    seed = int(os.environ.get("CHAOS_SEED", time.time_ns() % 1_000_000))
    print(f"chaos seed {seed} (CHAOS_SEED={seed} repeats the choices)")
    return random.Random(seed)
