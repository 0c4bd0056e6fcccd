"""Restart the broker while runs execute. This Redis keeps nothing on disk, so the messages of the
queued runs vanish and the sweeper (beat) must send them again; RabbitMQ keeps its durable queue
but drops every connection, redelivering unacknowledged messages of runs still executing."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

from browserq.store import Store
from tests.chaos.conftest import (
    AMQP_URL,
    REDIS_START,
    REDIS_URL,
    check_orders,
    producer,
    running_runs,
    submit_orders,
    wait_finished,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.chaos]

RUNS = 8
OUTAGE_S = 3


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def redis_answers() -> bool:
    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_timeout=1).ping())
    except redis.RedisError:
        return False


@contextmanager
def redis_down() -> Iterator[None]:
    """Stop Redis (nothing saved) for the body; it is started again even if the test fails."""
    try:
        subprocess.run(["redis-cli", "shutdown", "nosave"], check=False, capture_output=True, timeout=10)
        wait_for(lambda: not port_open(6379), 10, "Redis to stop")
        yield
    finally:
        if not redis_answers():
            subprocess.run(REDIS_START, check=True, capture_output=True, timeout=30)
        wait_for(redis_answers, 30, "Redis to come back")


def rabbitmq_answers() -> bool:
    done = subprocess.run(["rabbitmqctl", "await_startup", "--timeout", "2"], check=False, capture_output=True, timeout=30)
    return done.returncode == 0 and port_open(5672)


@contextmanager
def rabbitmq_down() -> Iterator[None]:
    """``rabbitmqctl stop_app`` for the body; ``start_app`` afterwards, even if the test fails."""
    try:
        subprocess.run(["rabbitmqctl", "stop_app"], check=True, capture_output=True, timeout=90)
        wait_for(lambda: not port_open(5672), 20, "RabbitMQ to stop listening")
        yield
    finally:
        subprocess.run(["rabbitmqctl", "start_app"], check=False, capture_output=True, timeout=120)
        if not rabbitmq_answers():  # the node itself died: start it the way scripts/services.sh does
            subprocess.run(["rabbitmq-server", "-detached"], check=False, capture_output=True, timeout=30)
        wait_for(rabbitmq_answers, 120, "RabbitMQ to come back", interval=1)


def test_redis_restart_loses_queued_messages_the_sweeper_resends_them(
    make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    cluster = make_cluster(REDIS_URL)
    cluster.start_worker("w1", concurrency=2)
    cluster.start_beat()
    demo.latency_ms = 150
    with producer(cluster, pg_url):
        run_ids = submit_orders(demo, RUNS)
    wait_for(lambda: len(running_runs(store, run_ids)) >= 2, 60, "two runs under way")
    waiting = redis.Redis.from_url(REDIS_URL).llen(cluster.queue)
    with redis_down():
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


def test_rabbitmq_restart_loses_nothing(make_cluster, demo, pg_url: str, store: Store, report) -> None:
    cluster = make_cluster(AMQP_URL)
    cluster.start_worker("w1", concurrency=2)
    cluster.start_beat()
    demo.latency_ms = 150
    with producer(cluster, pg_url):
        run_ids = submit_orders(demo, RUNS)
    wait_for(lambda: len(running_runs(store, run_ids)) >= 2, 60, "two runs under way")
    try:
        with rabbitmq_down():
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
        cluster.close()
        subprocess.run(["rabbitmqctl", "delete_queue", cluster.queue], check=False, capture_output=True, timeout=30)
