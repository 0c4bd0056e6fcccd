"""PostgreSQL unreachable for ~10 s while runs execute: the workers reach it through a TCP proxy
in this process that the test cuts (every connection reset, new ones refused) and restores. The
server itself keeps running; store writes must wait the outage out without losing or doubling
a record."""

from __future__ import annotations

import time

import pytest
from sqlalchemy.engine import make_url

from browserq.store import Store
from tests.chaos.conftest import (
    REDIS_URL,
    check_orders,
    duplicate_step_attempts,
    producer,
    running_runs,
    submit_orders,
    wait_finished,
    wait_for,
)
from tests.store.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.slow, pytest.mark.chaos]

RUNS = 8
OUTAGE_S = 10


def test_postgres_outage_mid_run_loses_and_doubles_no_record(
    make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    url = make_url(pg_url)
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432).start()
    try:
        through_proxy = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        cluster = make_cluster(REDIS_URL, database_url=through_proxy)
        cluster.start_worker("w1", concurrency=2)
        demo.latency_ms = 150
        with producer(cluster, pg_url):  # this process records the runs directly, not via the proxy
            run_ids = submit_orders(demo, RUNS)
        wait_for(lambda: len(running_runs(store, run_ids)) >= 2, 60, "two runs under way")
        hits_before = sum(demo.all_hits().values())
        proxy.cut()
        cut_at = time.monotonic()
        time.sleep(OUTAGE_S)
        hits_during = sum(demo.all_hits().values()) - hits_before
        proxy.restore()
        outage = time.monotonic() - cut_at
        final = wait_finished(store, run_ids, timeout=120)
        figures = check_orders(store, demo, run_ids, final)
        duplicates = duplicate_step_attempts(store, run_ids)
        log = cluster.log()
        retries = log.count("database error, retrying")
        report(figures.line(
            "postgres_outage", outage_s=f"{outage:.1f}", store_retries_logged=retries,
            duplicate_step_attempts=len(duplicates), site_hits_during_outage=hits_during,
        ))
        figures.verify()
        assert not duplicates, duplicates
        assert retries >= 2, "the workers never noticed the outage"
        # nothing gave up on the store (the outage is shorter than the retry window); a sweep that
        # met the outage says so without the error, since it only waits for the next interval
        assert "StoreUnavailable" not in log
    finally:
        proxy.stop()
