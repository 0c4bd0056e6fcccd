"""A broker connection that goes silent without closing: a NAT or load balancer that lost its state,
a frozen broker host. The worker's connections stay open and carry nothing (no FIN, no RST), while
new connections work. Without a bound on silence the worker waits on them forever and every run
sent afterwards stays ``queued``; with browserq's settings (``BROWSERQ_BROKER_HEARTBEAT_S``) the
worker notices within about three heartbeats, reconnects and consumes again, with no restart.

The producer (this process) goes through the same proxy, and its pooled connection is swallowed
too: the runs it sends after the loss must still reach the worker, and their handles resolve.
(The workers' sweeper may re-send a run that waits too long; any copy needs a worker that consumes
again.) Figures: the worker's first log line about a dropped connection and the first run started,
both counted from the swallow; the README's "Workers" section quotes them.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime

import pytest

from browserq.store import Store
from tests.chaos.conftest import (
    check_orders,
    producer,
    statuses,
    submit_orders,
    wait_finished,
    wait_for,
)
from tests.store.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.slow, pytest.mark.chaos]

RUNS = 4
HEARTBEAT_S = 10
#: What the test allows a worker to notice and recover (the bound: 3 heartbeats = 30 s) plus runs.
RECOVER_WITHIN_S = 6 * HEARTBEAT_S
BROKERS = {"redis": ("redis://127.0.0.1:{port}/0", 6379), "rabbitmq": ("amqp://guest:guest@127.0.0.1:{port}//", 5672)}
#: The worker's log lines of a dropped broker connection (kombu's Redis check, Celery's consumer).
RECONNECT = re.compile(r"dropping stale connection|Connection to broker lost|heartbeats missed", re.I)


@pytest.fixture
def broker_proxy(request: pytest.FixtureRequest) -> Iterator[tuple[str, str, TcpProxy]]:
    """(broker name, broker URL through the proxy, the proxy)."""
    url, port = BROKERS[request.param]
    proxy = TcpProxy("127.0.0.1", port).start()
    try:
        yield request.param, url.format(port=proxy.port), proxy
    finally:
        proxy.stop()


@pytest.mark.parametrize("broker_proxy", list(BROKERS), indirect=True)
def test_worker_recovers_from_a_half_open_broker_connection_without_a_restart(
    broker_proxy: tuple[str, str, TcpProxy], make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    broker, broker_url, proxy = broker_proxy
    cluster = make_cluster(broker_url, BROWSERQ_BROKER_HEARTBEAT_S=str(HEARTBEAT_S))
    worker = cluster.start_worker("w1", concurrency=2)
    # Not a context manager: a send hung on the old code must not hold the test past its failure
    # (the proxy's teardown ends it).
    pool = ThreadPoolExecutor(1)
    try:
        with producer(cluster, pg_url):
            # One run end to end first: the worker consumes and this process holds a pooled
            # connection of its own, both through the proxy.
            (first,) = submit_orders(demo, 1)
            _resolve(first, RECOVER_WITHIN_S)
            swallowed = proxy.swallow()
            swallowed_at, swallowed_wall = time.monotonic(), time.time()
            sending = pool.submit(submit_orders, demo, RUNS)
            try:
                run_ids = sending.result(timeout=RECOVER_WITHIN_S)
            except FutureTimeout:
                pytest.fail(f"sending {RUNS} runs hung for {RECOVER_WITHIN_S} s on a swallowed connection")
            sent_s = time.monotonic() - swallowed_at
            wait_for(lambda: _started(store, run_ids), RECOVER_WITHIN_S, "a run sent after the loss to start", interval=0.5)
            started_s = time.monotonic() - swallowed_at
            final = wait_finished(store, run_ids, timeout=RECOVER_WITHIN_S)
            for run_id in run_ids:
                _resolve(run_id, RECOVER_WITHIN_S)
        figures = check_orders(store, demo, run_ids, final)
        log = cluster.log("w1")
        report(figures.line(
            f"half_open_{broker}", swallowed_connections=swallowed, heartbeat_s=HEARTBEAT_S,
            worker_noticed_s=_noticed_after(log, swallowed_wall), sent_s=f"{sent_s:.1f}",
            swallow_to_first_start_s=f"{started_s:.1f}", worker_restarted=worker.poll() is not None,
        ))
        figures.verify()
        assert worker.poll() is None, "the worker exited: it must recover in place"
        assert swallowed >= 1
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        cluster.close()
        if broker == "rabbitmq":
            for queue in (cluster.queue, f"{cluster.queue}.sweep"):
                subprocess.run(["rabbitmqctl", "delete_queue", queue], check=False, capture_output=True, timeout=30)


def _noticed_after(log: str, since: float) -> str:
    """Seconds from the swallow to the worker's first line about a dropped broker connection."""
    for line in log.splitlines():
        if RECONNECT.search(line):
            stamp = datetime.fromisoformat(line.split()[0].replace("Z", "+00:00")).timestamp()
            if stamp >= since:
                return f"{stamp - since:.1f}"
    return "never"


def _started(store: Store, run_ids: list[str]) -> bool:
    return any(status != "queued" for status in statuses(store, run_ids).values())


def _resolve(run_id: str, timeout_s: float) -> None:
    """The run's Celery handle resolves (the result backend is the database, as by default)."""
    from browserq import run_template

    run_template.AsyncResult(run_id).get(timeout=timeout_s, propagate=False)
