"""PostgreSQL away for longer than the store's retry window (60 s), and a pooled connection that
stops answering while its TCP connection stays up: the workers reach the database through TCP
proxies in this process (tests/store/tcp_proxy.py) that the tests break and heal.

* A 120 s and a 300 s outage: every run completes afterwards, resumed from its checkpoint; none
  ends ``INTERNAL`` or failed because the database was away, and no side effect runs twice.
* Every connection open through the proxy swallowed (no FIN, no RST, nothing either way) while
  runs are in flight: the stalled connections are dropped (the answer timeout) and the runs
  finish — not interrupted at Celery's soft limit with ``RUN_TIMEOUT``.

The three run side by side (three clusters, three proxies): the suite waits for the longest only.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from browserq.store import Store
from browserq.store.answering import NO_ANSWER
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
def test_long_outages_and_a_stalled_connection_are_ridden_out(
    make_cluster, demo, pg_url: str, store: Store, report
) -> None:
    """Three clusters side by side, so the suite waits for the longest fault only (~6 min): the
    database cut for 120 s, cut for 300 s, and every open connection swallowed for good."""
    faults = [f"outage_{s}s" for s in OUTAGES_S] + ["stalled_connections"]
    proxies = [_proxy(pg_url) for _ in faults]
    try:
        runs: list[list[str]] = []
        demo.latency_ms = 150
        clusters = [make_cluster(REDIS_URL, database_url=_through(proxy, pg_url)) for proxy in proxies]
        with ThreadPoolExecutor(len(clusters)) as starting:  # their browsers launch side by side
            list(starting.map(lambda cluster: cluster.start_worker("w1", concurrency=2), clusters))
        for cluster in clusters:
            with producer(cluster, pg_url):  # this process records the runs directly, not via a proxy
                runs.append(submit_orders(demo, RUNS))
        wait_for(lambda: all(len(running_runs(store, ids)) >= 2 for ids in runs), 180, "two runs under way in each")
        for proxy in proxies[: len(OUTAGES_S)]:
            proxy.cut()
        swallowed = proxies[-1].swallow()  # open, acknowledged, silent for good; new ones work
        cut_at = time.monotonic()
        healers = [threading.Thread(target=_restore_at, args=(proxy, cut_at + after_s))
                   for proxy, after_s in zip(proxies, OUTAGES_S, strict=False)]
        for healer in healers:
            healer.start()
        finals: dict[str, dict[str, str]] = {}
        finished_s: dict[str, float] = {}
        for fault, ids in sorted(zip(faults, runs, strict=True), key=lambda pair: pair[0] != faults[-1]):
            finals[fault] = wait_finished(store, ids, timeout=max(OUTAGES_S) + 300 - (time.monotonic() - cut_at))
            finished_s[fault] = time.monotonic() - cut_at
        for healer in healers:
            healer.join()
        checked = []
        for fault, cluster, ids in zip(faults, clusters, runs, strict=True):
            figures = check_orders(store, demo, ids, finals[fault])
            duplicates = duplicate_step_attempts(store, ids)
            codes = error_codes(store, ids)
            log = cluster.log()
            extra = {"swallowed_connections": swallowed} if fault == faults[-1] else {}
            report(figures.line(
                f"postgres_{fault}", failed_codes=dict(codes), duplicate_step_attempts=len(duplicates),
                finished_s_after_fault=f"{finished_s[fault]:.0f}", silent_connections_dropped=log.count(NO_ANSWER),
                attempts_stopped_for_the_database=log.count("the database stayed unavailable"), **extra,
            ))
            checked.append((fault, figures, duplicates, codes))
        assert swallowed > 0
        for fault, figures, duplicates, codes in checked:
            assert "INTERNAL" not in codes and "RUN_TIMEOUT" not in codes, (fault, codes)
            figures.verify()
            assert not duplicates, (fault, duplicates)
    finally:
        for proxy in proxies:
            proxy.stop()


def _restore_at(proxy: TcpProxy, moment: float) -> None:
    time.sleep(max(0.0, moment - time.monotonic()))
    proxy.restore()
