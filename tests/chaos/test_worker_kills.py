"""SIGKILL worker processes mid-run: a prefork child (Celery redelivers its message), or a whole
worker (nobody redelivers: the sweeper re-sends once the lease expires)."""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

from browserq.demo.site import DEMO_PASSWORD
from browserq.store import Store
from tests.chaos.conftest import (
    FINAL,
    ORDER_REF,
    REDIS_URL,
    check_orders,
    current_step,
    owner_pid,
    producer,
    running_runs,
    statuses,
    submit_orders,
    wait_finished,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.chaos]

RUNS = 24
MIN_KILLS = 5
MAX_KILLS = 8
LAST_STEP = "10"


def test_sigkill_a_worker_child_every_two_seconds(
    make_cluster, demo, pg_url: str, store: Store, report, rng: random.Random
) -> None:
    cluster = make_cluster()
    cluster.start_worker("w1", concurrency=2)
    demo.latency_ms = 120
    with producer(cluster, pg_url):
        run_ids = submit_orders(demo, RUNS)
    kills: list[tuple[str, int]] = []  # (run id, child pid)
    deadline = time.monotonic() + 170
    next_kill = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        now = statuses(store, run_ids)
        if all(now.get(r) in FINAL for r in run_ids):
            break
        if len(kills) < MAX_KILLS and time.monotonic() >= next_kill:
            children = cluster.children("w1")
            # A run already taken over twice is spared: this test is about recovery, not about
            # the poison-run limit (max_worker_losses).
            candidates = [
                r for r in running_runs(store, run_ids)
                if owner_pid(r["lease_owner"]) in children and r["takeovers"] < 2
                and current_step(store, r["id"], r["attempt"]) != LAST_STEP  # about to finish
            ]
            if candidates:
                victim = rng.choice(candidates)
                pid = owner_pid(victim["lease_owner"])
                os.kill(pid, signal.SIGKILL)
                kills.append((victim["id"], pid))
                next_kill = time.monotonic() + rng.uniform(1.5, 2.5)
        time.sleep(0.1)
    final = wait_finished(store, run_ids, timeout=max(1.0, deadline - time.monotonic()))
    figures = check_orders(store, demo, run_ids, final)
    log = cluster.log("w1")
    lost_children = log.count("exited with 'signal 9 (SIGKILL)'")
    recovered = sum(
        1 for r in run_ids for s in store.steps.steps(r) if (s.output or {}) == {"recovered": True} or
        (isinstance(s.output, dict) and s.output.get("recovered") is True)
    )
    report(figures.line(
        "worker_child_sigkill", kills=len(kills), children_lost_per_celery=lost_children,
        side_effects_recovered_by_postcondition=recovered,
    ))
    figures.verify()
    assert len(kills) >= MIN_KILLS, f"only {len(kills)} kills landed mid-run"
    assert lost_children == len(kills)
    for run_id, pid in kills:  # every killed run was redelivered and taken over from its dead child
        run = store.runs.get_run(run_id)
        assert run.takeovers >= 1 or run.attempt >= 2, (run_id, pid, run.status, run.takeovers)
    assert figures.takeovers >= len({r for r, _ in kills})
    assert figures.resumed_from_checkpoint >= 1


def test_sigkill_a_whole_worker_its_runs_finish_on_the_other_via_the_sweeper(
    make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    cluster = make_cluster()
    cluster.start_worker("w1", concurrency=1)
    cluster.start_worker("w2", concurrency=1)
    cluster.start_beat()
    demo.latency_ms = 120
    with producer(cluster, pg_url):
        run_ids = submit_orders(demo, 6)
    w1_children = cluster.children("w1")
    w2_children = cluster.children("w2")

    def w1_past_a_checkpoint() -> list[dict]:
        return [
            r for r in running_runs(store, run_ids)
            if owner_pid(r["lease_owner"]) in w1_children
            and (store.runs.get_run(r["id"]).checkpoint or {}).get("path") not in (None, "9")
            and current_step(store, r["id"], r["attempt"]) != LAST_STEP
        ]

    victims = wait_for(w1_past_a_checkpoint, 60, "worker w1 to get past a checkpoint", interval=0.05)
    cluster.kill_worker("w1")  # parent and child at once, like an OOM kill of the container
    killed_at = time.time()
    final = wait_finished(store, run_ids, timeout=120)
    figures = check_orders(store, demo, run_ids, final)
    victim = store.runs.get_run(victims[0]["id"])
    reasons = [t.reason for t in store.transitions.transitions(victim.id)]
    sweeps = cluster.log().count("re-enqueued stuck run")
    report(figures.line(
        "whole_worker_sigkill", kills=1, victim_status=victim.status,
        victim_finished_after_s=(
            f"{victim.finished_at.timestamp() - killed_at:.1f}" if victim.finished_at else "never"
        ),
        sweeper_requeues=sweeps,
    ))
    figures.verify()
    assert victim.status in ("completed", "needs_review")
    assert owner_pid(victim.worker) in w2_children, (victim.worker, w2_children)
    assert any("re-enqueued by the sweeper" in r for r in reasons), reasons
    steps = store.steps.steps(victim.id)
    assert any(s.action == "resume" for s in steps), "the victim restarted instead of resuming"
    assert {owner_pid(r["lease_owner"]) for r in victims} <= w1_children


def test_sigkill_a_worker_child_while_its_side_effect_is_answered(
    make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    """The form post reached the site, the answer is delayed, the child dies: Celery redelivers,
    the new child finds step 9 'started', probes the postcondition and does not post again."""
    cluster = make_cluster()
    cluster.start_worker("w1", concurrency=1)
    demo.latency_ms = 100
    demo.confirm_delay_ms = 3000
    with producer(cluster, pg_url):
        (run_id,) = submit_orders(demo, 1)
    wait_for(lambda: demo.submissions_with(run_id) == 1, 60, "the form post")
    (child,) = cluster.children("w1")
    os.kill(child, signal.SIGKILL)
    demo.confirm_delay_ms = 0
    final = wait_finished(store, [run_id], timeout=60)
    figures = check_orders(store, demo, [run_id], final)
    send = [(s.run_attempt, s.status, s.error_code, (s.output or {}).get("recovered")) for s in store.steps.steps(run_id)
            if s.step_path == "9"]
    report(figures.line("worker_child_sigkill_during_side_effect", kills=1, send_records=send))
    figures.verify()
    assert final[run_id] == "completed"
    assert send == [(1, "unknown", "WORKER_LOST", None), (2, "succeeded", None, True)], send


@pytest.mark.timeout(480)
@pytest.mark.parametrize("sweeper", ["in_workers", "beat_only"])
def test_every_handle_resolves_after_sigkills(
    sweeper: str, make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    """A whole worker and a worker child SIGKILLed mid-run: the sweep (inside the surviving worker
    with no beat running, or only from beat) re-sends the runs, and every handle ``.delay()``
    returned resolves with its run's outcome (the sweeper re-sends under the run's own task id)."""
    from browserq import RunFailed, run_template

    in_workers = sweeper == "in_workers"
    cluster = make_cluster(BROWSERQ_RESULT_BACKEND=REDIS_URL, BROWSERQ_SWEEP_IN_WORKERS=str(in_workers).lower())
    cluster.start_worker("w1", concurrency=1)
    cluster.start_worker("w2", concurrency=1)
    if not in_workers:
        cluster.start_beat()
    demo.latency_ms = 120
    with producer(cluster, pg_url):
        handles = [
            run_template.delay(ORDER_REF, params={"base_url": demo.url, "password": DEMO_PASSWORD})
            for _ in range(5)
        ]
        run_ids = [h.id for h in handles]
        w1_children, w2_children = cluster.children("w1"), cluster.children("w2")

        def mid_run_on(children: set[int]) -> list[dict]:
            return [r for r in running_runs(store, run_ids) if owner_pid(r["lease_owner"]) in children
                    and current_step(store, r["id"], r["attempt"]) != LAST_STEP]

        whole = wait_for(lambda: mid_run_on(w1_children), 90, "a run mid-way on w1")[0]
        cluster.kill_worker("w1")  # nobody redelivers its message: only a sweep can
        child = wait_for(lambda: mid_run_on(w2_children), 90, "a run mid-way on w2's child")[0]
        os.kill(owner_pid(child["lease_owner"]), signal.SIGKILL)  # Celery requeues this one
        outcomes = {h.id: h.get(timeout=300, propagate=False) for h in handles}
    final = wait_finished(store, run_ids, timeout=30)
    figures = check_orders(store, demo, run_ids, final)
    report(figures.line(f"handles_after_sigkill_{sweeper}", handles=len(handles),
                        resolved=sum(1 for v in outcomes.values() if v is not None)))
    figures.verify()
    for run_id, value in outcomes.items():
        run = store.runs.get_run(run_id)
        if isinstance(value, RunFailed):
            assert (value.run_id, value.status) == (run_id, run.status) and run.status == "needs_review", value
        else:
            assert isinstance(value, dict), value
            assert (value["run_id"], value["status"]) == (run_id, "completed") == (run.id, run.status)
    reasons = [t.reason for t in store.transitions.transitions(whole["id"])]
    assert any("re-enqueued by the sweeper" in (r or "") for r in reasons), reasons
    assert ("this process now runs the fleet's sweeper" in cluster.log("w2")) is in_workers
