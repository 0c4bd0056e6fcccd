"""The same task message delivered twice executes the run once; a thousand failing tool calls
(eval steps that throw) never cost a browser relaunch."""

from __future__ import annotations

import re

import pytest
import redis
import sqlalchemy as sa

from browserq.store import Store
from tests.chaos.conftest import (
    EVAL_REF,
    ORDER_REF,
    REDIS_URL,
    check_orders,
    producer,
    submit_orders,
    wait_finished,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.chaos]


def test_a_message_delivered_twice_runs_once(make_cluster, demo, pg_url: str, store: Store, report) -> None:
    from browserq import run_template

    cluster = make_cluster(REDIS_URL)
    cluster.start_worker("w1", concurrency=2)
    demo.latency_ms = 150
    run_ids: list[str] = []
    with producer(cluster, pg_url):
        for _ in range(6):
            # Each run's second message right behind its first: with two children, both copies
            # are picked up at the same moment.
            (run_id,) = submit_orders(demo, 1)
            run_template.apply_async(args=[ORDER_REF], kwargs={"run_id": run_id})
            run_ids.append(run_id)
    # And byte-identical copies of whatever still waits in the queue (same task id, same
    # delivery tag), as a broker redelivery would produce them.
    broker = redis.Redis.from_url(REDIS_URL)
    waiting = broker.lrange(cluster.queue, 0, -1)
    for raw in waiting:
        broker.lpush(cluster.queue, raw)
    sent = len(run_ids) * 2 + len(waiting)
    final = wait_finished(store, run_ids, timeout=90)

    def received() -> int:
        return len(re.findall(r"Task browserq\.run_template\[[\w-]+\] received", cluster.log()))

    wait_for(lambda: received() >= sent and broker.llen(cluster.queue) == 0, 30, "every copy delivered")
    figures = check_orders(store, demo, run_ids, final)
    log = cluster.log()
    deliveries = received()
    busy = log.count("run busy elsewhere")
    overlapping = []
    for run_id in run_ids:
        run = store.runs.get_run(run_id)
        starts = [t for t in store.transitions.transitions(run_id) if t.to_status == "running"]
        attempts = {s.run_attempt for s in store.steps.steps(run_id)}
        if run.attempt != 1 or run.takeovers or len(starts) != 1 or attempts != {1}:
            overlapping.append((run_id, run.attempt, run.takeovers, [t.reason for t in starts], attempts))
    report(figures.line(
        "duplicate_delivery", messages_sent=sent, deliveries=deliveries,
        duplicates_refused_busy=busy, runs_executed_more_than_once=len(overlapping),
    ))
    figures.verify()
    assert busy >= 1, "no duplicate ever met its run while it executed"
    assert not overlapping, overlapping


def test_a_thousand_failing_evals_never_relaunch_the_browser(
    make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    from browserq import run_template

    cluster = make_cluster(REDIS_URL)
    cluster.start_worker("w1", concurrency=2)
    browsers_before = set(cluster.browser_roots())
    demo.latency_ms = 100
    with producer(cluster, pg_url):
        run_ids = [run_template.delay(EVAL_REF, params={"base_url": demo.url}).id for _ in range(10)]
    final = wait_finished(store, run_ids, timeout=120)
    with store.engine.connect() as conn:
        rows = conn.execute(sa.text("""
            select status, error_code, count(*) from step_attempts
            where run_id = any(:ids) and action = 'eval' group by status, error_code
        """), {"ids": run_ids}).all()
    evals = {(status, code): n for status, code, n in rows}
    log = cluster.log("w1")
    launches = log.count("browser launched")
    browsers_after = set(cluster.browser_roots()) & browsers_before
    report(
        f"chaos tool_errors: runs={len(run_ids)} completed={sum(s == 'completed' for s in final.values())} "
        f"failed_eval_steps={evals.get(('failed', 'EVAL_ERROR'), 0)} other_eval_records={sum(evals.values()) - evals.get(('failed', 'EVAL_ERROR'), 0)} "
        f"browser_relaunches={launches - 2} lost=0"
    )
    assert set(final.values()) == {"completed"}, final
    assert evals == {("failed", "EVAL_ERROR"): 1000}, evals
    assert launches == 2 and "relaunching" not in log
    assert browsers_after == browsers_before  # the very same two Chromium processes
