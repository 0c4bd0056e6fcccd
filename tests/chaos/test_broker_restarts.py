"""Restart the broker while runs execute. This Redis keeps nothing on disk, so the messages of the
queued runs vanish and the sweeper (beat) must send them again; RabbitMQ keeps its durable queue
but drops every connection, redelivering unacknowledged messages of runs still executing.

The brokers restarted are private to the test (:mod:`tests.support.servers`): a Redis and a second
RabbitMQ node on ports of their own, so the rest of the suite (other xdist workers, other people's
tests on this machine) keeps its brokers while these go down.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

from browserq.store import Store
from tests.chaos.conftest import (
    check_orders,
    producer,
    running_runs,
    submit_orders,
    wait_finished,
    wait_for,
)
from tests.support.servers import RabbitNode, RedisServer, port_open

pytestmark = [pytest.mark.slow, pytest.mark.chaos]

RUNS = 8
OUTAGE_S = 3


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def private_rabbitmq() -> Iterator[RabbitNode]:
    assert RabbitNode.available(), "RabbitMQ is not installed (/usr/lib/rabbitmq/bin/rabbitmq-server)"
    node = RabbitNode().start()
    try:
        yield node
    finally:
        node.close()


@contextmanager
def redis_down(server: RedisServer) -> Iterator[None]:
    """Stop Redis (nothing saved) for the body; it is started again even if the test fails."""
    try:
        server.stop()
        yield
    finally:
        if not server.answers():
            server.start()


@contextmanager
def rabbitmq_down(node: RabbitNode) -> Iterator[None]:
    """``rabbitmqctl stop_app`` for the body; ``start_app`` afterwards, even if the test fails."""
    try:
        node.ctl("stop_app", check=True)
        wait_for(lambda: not port_open(node.port), 20, "RabbitMQ to stop listening")
        yield
    finally:
        node.ctl("start_app", timeout_s=120)
        wait_for(node.answers, 120, "RabbitMQ to come back", interval=1)


def test_redis_restart_loses_queued_messages_the_sweeper_resends_them(
    private_redis: RedisServer, make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    broker_url = f"{private_redis.url}/0"
    cluster = make_cluster(broker_url)
    cluster.start_worker("w1", concurrency=2)
    cluster.start_beat()
    demo.latency_ms = 150
    with producer(cluster, pg_url):
        run_ids = submit_orders(demo, RUNS)
    wait_for(lambda: len(running_runs(store, run_ids)) >= 2, 60, "two runs under way")
    waiting = redis.Redis.from_url(broker_url).llen(cluster.queue)
    with redis_down(private_redis):
        time.sleep(OUTAGE_S)
    final = wait_finished(store, run_ids, timeout=120)
    figures = check_orders(store, demo, run_ids, final)
    log = cluster.log()
    requeued = log.count("re-enqueued stuck run")
    report(figures.line(
        "redis_restart", messages_vanished=waiting, sweeper_requeues=requeued,
        deliveries=len(re.findall(r"Task browserq\.run_template\[[\w-]+\] received", log)),
        duplicate_deliveries_refused=log.count("run busy elsewhere"),
    ))
    figures.verify()
    assert waiting >= 1, "no message was waiting in Redis when it stopped: the restart tested nothing"
    assert requeued >= waiting


def test_rabbitmq_restart_loses_nothing(
    private_rabbitmq: RabbitNode, make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    cluster = make_cluster(private_rabbitmq.url)
    cluster.start_worker("w1", concurrency=2)
    cluster.start_beat()
    demo.latency_ms = 150
    with producer(cluster, pg_url):
        run_ids = submit_orders(demo, RUNS)
    wait_for(lambda: len(running_runs(store, run_ids)) >= 2, 60, "two runs under way")
    try:
        with rabbitmq_down(private_rabbitmq):
            time.sleep(OUTAGE_S)
        final = wait_finished(store, run_ids, timeout=120)
        figures = check_orders(store, demo, run_ids, final)
        log = cluster.log()
        report(figures.line(
            "rabbitmq_restart", sweeper_requeues=log.count("re-enqueued stuck run"),
            deliveries=len(re.findall(r"Task browserq\.run_template\[[\w-]+\] received", log)),
            duplicate_deliveries_refused=log.count("run busy elsewhere"),
        ))
        figures.verify()
        for run_id in run_ids:  # a redelivery never ran a run a second time
            starts = [t for t in store.transitions.transitions(run_id) if t.to_status == "running"]
            assert len(starts) == store.runs.get_run(run_id).attempt
    finally:
        cluster.close()  # before the node goes: its queues go with it
