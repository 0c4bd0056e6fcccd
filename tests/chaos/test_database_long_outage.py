"""PostgreSQL away for longer than the store's retry window (60 s), and a pooled connection that
stops answering while its TCP connection stays up: the workers reach the database through TCP
proxies in this process (tests/store/tcp_proxy.py) that the tests break and heal.

* A 120 s and a 300 s outage, run side by side (two clusters, two proxies) so the suite waits
  for the longer one only: every run completes afterwards, resumed from its checkpoint; none
  ends ``INTERNAL`` or failed because the database was away, and no side effect runs twice.
* Every connection open through the proxy swallowed (no FIN, no RST, nothing either way) while
  runs are in flight: the stalled connections are dropped (the answer timeout) and the runs
  finish — not interrupted at Celery's soft limit with ``RUN_TIMEOUT``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest
import sqlalchemy as sa
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

RUNS = 4  # per cluster; two children each, so two are mid-run and two wait in the queue
OUTAGES_S = (120, 300)


def _through(proxy: TcpProxy, pg_url: str) -> str:
    return make_url(pg_url).set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)


def _proxy(pg_url: str) -> TcpProxy:
    url = make_url(pg_url)
    return TcpProxy(url.host or "127.0.0.1", url.port or 5432).start()


def error_codes(store: Store, run_ids: list[str]) -> Counter:
    with store.engine.connect() as conn:
        rows = conn.execute(sa.text("select error_code from runs where id = any(:ids) and status = 'failed'"),
                            {"ids": run_ids})
        return Counter(code or "none" for (code,) in rows)


@pytest.mark.timeout(900)
def test_outages_of_120_and_300_s_are_ridden_out(make_cluster, demo, pg_url: str, store: Store, report) -> None:
    proxies = [_proxy(pg_url) for _ in OUTAGES_S]
    try:
        clusters, runs = [], []
        demo.latency_ms = 150
        for proxy in proxies:
            cluster = make_cluster(REDIS_URL, database_url=_through(proxy, pg_url))
            cluster.start_worker("w1", concurrency=2)
            clusters.append(cluster)
        for cluster in clusters:
            with producer(cluster, pg_url):  # this process records the runs directly, not via a proxy
                runs.append(submit_orders(demo, RUNS))
        wait_for(lambda: all(len(running_runs(store, ids)) >= 2 for ids in runs), 120, "two runs under way in each")
        for proxy in proxies:
            proxy.cut()
        cut_at = time.monotonic()
        restored: list[float] = []

        def restore(proxy: TcpProxy, after_s: float) -> None:
            time.sleep(max(0.0, cut_at + after_s - time.monotonic()))
            proxy.restore()
            restored.append(time.monotonic() - cut_at)

        healers = [threading.Thread(target=restore, args=pair) for pair in zip(proxies, OUTAGES_S, strict=True)]
        for healer in healers:
            healer.start()
        finals: list[dict[str, str]] = []
        finished_s: list[float] = []
        for ids, outage_s in zip(runs, OUTAGES_S, strict=True):
            finals.append(wait_finished(store, ids, timeout=outage_s + 300 - (time.monotonic() - cut_at)))
            finished_s.append(time.monotonic() - cut_at)
        for healer in healers:
            healer.join()
        failures: list[Any] = []
        for cluster, ids, final, outage_s, done_s in zip(clusters, runs, finals, OUTAGES_S, finished_s, strict=True):
            figures = check_orders(store, demo, ids, final)
            duplicates = duplicate_step_attempts(store, ids)
            log = cluster.log()
            report(figures.line(
                f"postgres_outage_{outage_s}s", failed_codes=dict(error_codes(store, ids)),
                duplicate_step_attempts=len(duplicates), store_unavailable_logged=log.count("StoreUnavailable"),
                waits_for_database_logged=log.count("waiting for the database"),
                finished_s_after_cut=f"{done_s:.0f}",
            ))
            failures.append((figures, duplicates, error_codes(store, ids)))
        for figures, duplicates, codes in failures:
            assert "INTERNAL" not in codes, codes
            figures.verify()
            assert not duplicates, duplicates
    finally:
        for proxy in proxies:
            proxy.stop()


@pytest.mark.timeout(600)
def test_a_stalled_pooled_connection_is_dropped_not_waited_on(
    make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    proxy = _proxy(pg_url)
    try:
        cluster = make_cluster(REDIS_URL, database_url=_through(proxy, pg_url))
        cluster.start_worker("w1", concurrency=2)
        demo.latency_ms = 150
        with producer(cluster, pg_url):
            run_ids = submit_orders(demo, RUNS)
        wait_for(lambda: len(running_runs(store, run_ids)) >= 2, 120, "two runs under way")
        swallowed = proxy.swallow()  # every open connection goes silent, its TCP connection stays up
        stalled_at = time.monotonic()
        final = wait_finished(store, run_ids, timeout=400)
        finished_s = time.monotonic() - stalled_at
        figures = check_orders(store, demo, run_ids, final)
        duplicates = duplicate_step_attempts(store, run_ids)
        codes = error_codes(store, run_ids)
        log = cluster.log()
        report(figures.line(
            "postgres_stalled_connections", swallowed_connections=swallowed, failed_codes=dict(codes),
            finished_s_after_stall=f"{finished_s:.0f}", dropped_logged=log.count("sent no answer"),
            connections_through_proxy=proxy.connections, duplicate_step_attempts=len(duplicates),
        ))
        assert swallowed > 0
        assert "RUN_TIMEOUT" not in codes, codes
        figures.verify()
        assert not duplicates, duplicates
    finally:
        proxy.stop()
