"""Leases run on the database's clock: a worker whose clock is minutes off (libfaketime) next to a
normal one takes no healthy run over and none is taken from it; and a worker that was paused past
its lease (SIGSTOP) and finds its run finished elsewhere says so in one INFO line.

The fleet's sweeper runs in the worker whose clock is ahead (started first, so it takes the sweep
lock): on the worker's own clock it would see every lease of the other worker as expired."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from browserq.errors import Codes
from browserq.store import Store
from tests.chaos.conftest import (
    Cluster,
    check_orders,
    owner_pid,
    producer,
    running_runs,
    submit_orders,
    wait_finished,
    wait_for,
)
from tests.support.skewed import LIBFAKETIME
from tests.support.workers import spawn_logged, wait_for_log

pytestmark = [pytest.mark.slow, pytest.mark.chaos]

SWEEPER_LINE = "this process now runs the fleet's sweeper"


def start_worker(cluster: Cluster, name: str, *, skew: str | None = None) -> subprocess.Popen:
    """A prefork worker (one child); ``skew``: its clock's offset for libfaketime, e.g. ``+2m``."""
    env = dict(cluster.env)
    launcher = [sys.executable, "-m", "celery"]
    if skew is not None:
        env.update(LD_PRELOAD=LIBFAKETIME, FAKETIME=skew, FAKETIME_DONT_FAKE_MONOTONIC="1")
        launcher = [sys.executable, "-m", "tests.support.skewed"]
    log = cluster.tmp / f"{name}.log"
    proc = spawn_logged(
        [
            *launcher,
            "-A",
            "browserq.celery_app:app",
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            "1",
            "-Q",
            f"{cluster.queue},{cluster.queue}.sweep",
            "-n",
            f"{cluster.queue}-{name}@%h",
            "--loglevel",
            "INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        env,
        log,
    )
    cluster.procs[name], cluster.logs[name] = proc, log
    wait_for_log(
        proc, log, lambda text: "ready." in text and "runtime started" in text, 90, f"worker {name}"
    )
    return proc


SKEWS = {"+2m": 120, "-2m": -120, "+10m": 600}


def clock_of(log: str) -> datetime:
    """The skewed worker's clock, as its last log line's timestamp shows it."""
    stamps = re.findall(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", log, re.MULTILINE)
    return datetime.fromisoformat(stamps[-1]).replace(tzinfo=UTC)


def held_requeues(log: str) -> list[str]:
    """The sweeper's re-sends of runs it thought abandoned (not of queued runs waiting for a slot)."""
    return [
        line
        for line in log.splitlines()
        if "re-enqueued stuck run" in line
        and "status=queued" not in line
        and "status=retrying" not in line
    ]


def lost_steps(store: Store, run_ids: list[str]) -> list[tuple]:
    query = (
        "select run_id, step_path, status, error_code from step_attempts where run_id = any(:ids) "
    )
    query += "and (error_code like 'WORKER_LOST%' or status = 'started')"
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(query), {"ids": run_ids})]


@pytest.mark.parametrize("skew", list(SKEWS))
def test_a_worker_with_a_skewed_clock_takes_no_healthy_run_over(
    make_cluster, demo, pg_url: str, store: Store, report, skew: str
) -> None:
    assert Path(LIBFAKETIME).exists(), (
        "libfaketime is missing: apt-get install faketime (scripts/bootstrap.sh)"
    )
    # A 15-s lease, not the chaos default of 4: under libfaketime the skewed worker's first run
    # waits ~2 s before its first step (0.4-0.8 s unskewed), and on a loaded machine (load 16, the
    # suite's 4 workers) that stall outlived a 4-s lease once — a takeover of a run whose worker
    # was merely slow. Every skew here is minutes, so a lease read on a worker's own clock would
    # still look expired (or never expire) and fail this test.
    cluster = make_cluster(BROWSERQ_LEASE_TTL_S="15")
    ahead, behind = (
        (("skewed", skew), ("normal", None))
        if skew.startswith("+")
        else (("normal", None), ("skewed", skew))
    )
    start_worker(cluster, ahead[0], skew=ahead[1])
    wait_for(
        lambda: SWEEPER_LINE in cluster.log(ahead[0]),
        30,
        f"the {ahead[0]} worker to run the sweeper",
    )
    start_worker(cluster, behind[0], skew=behind[1])
    demo.latency_ms = 150  # runs outlive several lease renewals (one every 2 s: heartbeat.CANCEL_POLL_S)
    with producer(cluster, pg_url):
        run_ids = submit_orders(demo, 6)
    final = wait_finished(store, run_ids, timeout=150)
    offset = clock_of(cluster.log("skewed")) - datetime.now(UTC)
    assert abs(offset.total_seconds() - SKEWS[skew]) < 60, (
        f"the worker's clock is {offset} off, not {skew}"
    )
    figures = check_orders(store, demo, run_ids, final)
    runs = [store.runs.get_run(r) for r in run_ids]
    workers = {owner_pid(r.worker) for r in runs if r.worker}
    report(
        figures.line(
            f"clock_skew_{skew}",
            workers=len(workers),
            running_requeued=len(held_requeues(cluster.log())),
        )
    )
    takeovers = {r.id: r.takeovers for r in runs if r.takeovers}
    assert not takeovers, f"healthy runs taken over with a worker at {skew}: {takeovers} {final}"
    assert all(r.status == "completed" for r in runs), final
    assert not lost_steps(store, run_ids)
    assert not held_requeues(cluster.log()), held_requeues(cluster.log())
    figures.verify()


def test_a_paused_worker_fenced_out_of_its_run_logs_one_info_line(
    make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    cluster = make_cluster()
    start_worker(cluster, "w1")
    wait_for(lambda: SWEEPER_LINE in cluster.log("w1"), 30, "w1 to run the sweeper")
    start_worker(cluster, "w2")  # its run is paused: the sweeper must not be in that process
    w2 = cluster.children("w2")
    demo.latency_ms = 150
    with producer(cluster, pg_url):
        run_ids = submit_orders(demo, 2)

    def on_w2() -> list[dict]:
        return [r for r in running_runs(store, run_ids) if owner_pid(r["lease_owner"]) in w2]

    running = wait_for(on_w2, 60, "a run on w2 to get past its first step", interval=0.05)
    run_ids = [running[0]["id"]]
    paused = owner_pid(running[0]["lease_owner"])
    group = cluster.procs["w2"].pid  # the worker's session: parent, child, driver and browser
    os.killpg(group, signal.SIGSTOP)  # a frozen host (VM pause, partition): its lease expires
    try:
        final = wait_finished(store, run_ids, timeout=120)
    finally:
        os.killpg(group, signal.SIGCONT)
    run = store.runs.get_run(run_ids[0])
    assert final[run.id] in ("completed", "needs_review"), final
    assert run.takeovers == 1 and owner_pid(run.worker) != paused
    reasons = [t.reason for t in store.transitions.transitions(run.id)]
    assert any("lease expired" in r or "stopped renewing the lease" in r for r in reasons), reasons
    fenced = "fenced out"
    wait_for(lambda: fenced in cluster.log(), 60, "the paused worker to notice it was fenced out")
    text = cluster.log()
    lines = [line for line in text.splitlines() if fenced in line]
    report(f"fenced_out: lines={len(lines)} takeovers={run.takeovers} status={run.status}")
    assert len(lines) == 1 and "info" in lines[0].lower(), lines
    assert "raised unexpected" not in text and "Traceback" not in text, text[-4000:]
    worries = [
        line
        for line in text.splitlines()
        if run.id in line and ("[warning" in line or "[error" in line)
    ]
    assert not worries, worries
    assert Codes.WORKER_LOST_REPEATEDLY.code not in text
