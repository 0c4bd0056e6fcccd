"""The instrumented modules record what they did, read back from prometheus_client's registry of
this process (real Chromium, Redis and SQLite; counts are compared before and after, since other
tests in this process record too). Each is handed the worker's meter, as
:func:`browserq.tasks.observers.worker_meters` hands it."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from browserq.browsers import BrowserPool, EventLoopThread
from browserq.browsers.instance import Instance, retire_reason
from browserq.execute import prepare_loaded, record_run
from browserq.execute.identity_slots import IdentitySlots
from browserq.limits import RateLimiter
from browserq.metrics import definitions as metrics
from browserq.metrics.definitions import code_label, recycle_reason
from browserq.proxies import ProxyHealth, make_redis, parse_proxy
from browserq.runner import RunRequest
from browserq.secrets import SecretBox
from browserq.store import IdentityBusy, Store
from tests.conftest import TEST_SECRET_KEY, make_settings, template
from tests.support.redis import LIMITS_DB, PROXIES_DB, redis_url, wait_for_redis


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_rate_limit_waits_are_counted_by_the_limited_domain_never_by_host() -> None:
    url = redis_url(LIMITS_DB)
    wait_for_redis(url)
    prefix = f"browserq:test-metrics:{uuid.uuid4().hex[:8]}:"
    limiter = RateLimiter(url, per_domain={"metrics.test": "2/s burst 1", "*": "100/s burst 50"}, prefix=prefix,
                          waited=metrics.rate_limit_waited)
    before = (value("browserq_rate_limit_waits_total", domain="metrics.test"),
              value("browserq_rate_limit_wait_seconds_count", domain="metrics.test"),
              value("browserq_rate_limit_wait_seconds_count", domain="*"))

    async def go() -> None:
        await limiter.acquire("https://a.metrics.test/x", deadline_s=10)  # a free token
        await limiter.acquire("https://b.metrics.test/y", deadline_s=10)  # waits ~0.5 s for the next
        await limiter.acquire("https://elsewhere.test/", deadline_s=10)  # the default: per host
        await limiter.aclose()

    try:
        asyncio.run(go())
    finally:
        limiter.reset()
    assert value("browserq_rate_limit_waits_total", domain="metrics.test") - before[0] == 1
    assert value("browserq_rate_limit_wait_seconds_count", domain="metrics.test") - before[1] == 2
    assert value("browserq_rate_limit_wait_seconds_count", domain="*") - before[2] == 1
    assert value("browserq_rate_limit_wait_seconds_count", domain="elsewhere.test") == 0


def test_proxy_failures_are_counted_by_kind() -> None:
    url = redis_url(PROXIES_DB)
    wait_for_redis(url)
    health = ProxyHealth(make_redis(url), namespace=f"browserq:test-metrics:{uuid.uuid4().hex[:8]}",
                         failed=metrics.proxy_failed)
    proxy = parse_proxy("http://user:pw@10.9.8.7:3128")
    before = value("browserq_proxy_failures_total", kind="refused")
    try:
        health.record_failure(proxy, "refused")
        health.record_failure(proxy, "refused")
        assert value("browserq_proxy_failures_total", kind="refused") - before == 2
    finally:
        health.reset([proxy])


def test_identity_leases_are_counted_by_result(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = Store(settings.database_url)
    store.schema.upgrade()
    slots = IdentitySlots(store, SecretBox(TEST_SECRET_KEY), settings, owner="here:1:1",
                          leased=metrics.identity_lease)
    before = {r: value("browserq_identity_leases_total", result=r) for r in ("leased", "busy")}
    try:
        store.identities.upsert_identity(name="metrics-alice")
        runs = []
        for _ in range(2):
            prepared = prepare_loaded(template("steps:\n  - {action: navigate, url: 'http://127.0.0.1:9/'}\n"), {})
            record_run(store, prepared, secret_box=None, identity="metrics-alice")
            runs.append((store.runs.get_run(prepared.run_id), prepared))
        requests = [RunRequest(run_id=run.id, run_attempt=1, loaded=p.loaded, params={}) for run, p in runs]
        slots.lease(requests[0], runs[0][0])
        with pytest.raises(IdentityBusy):
            slots.lease(requests[1], runs[1][0])  # alice is the first run's
    finally:
        store.dispose()
    assert value("browserq_identity_leases_total", result="leased") - before["leased"] == 1
    assert value("browserq_identity_leases_total", result="busy") - before["busy"] == 1


def test_the_pool_counts_launches_recycles_and_its_contexts(tmp_path: Path) -> None:
    loop = EventLoopThread().start()
    # A browser retires once it has served one context: the warm-up one.
    pool = BrowserPool(make_settings(tmp_path, browser_max_contexts=1, context_prewarm=1),
                       meter=metrics.PoolMetrics())
    launches = {k: value("browserq_browser_launches_total", kind=k) for k in ("start", "recycle")}
    recycles = value("browserq_browser_recycles_total", reason="contexts")
    try:
        loop.run(pool.start(), timeout=60)
        assert value("browserq_browser_launches_total", kind="start") - launches["start"] == 1
        assert value("browserq_browser_contexts", state="spare") == 1
        context = loop.run(pool.new_context(locale="de-DE"), timeout=60)  # retires the first browser
        assert value("browserq_browser_recycles_total", reason="contexts") - recycles == 1
        assert value("browserq_browser_launches_total", kind="recycle") - launches["recycle"] == 1
        assert value("browserq_browser_contexts", state="in_use") == 1
        loop.run(pool.close_context(context), timeout=30)
        assert value("browserq_browser_contexts", state="in_use") == 0
    finally:
        loop.run(pool.stop(), timeout=60)
        loop.stop()
    assert value("browserq_browser_contexts", state="spare") == 0


def test_recycle_reasons_become_bounded_labels(tmp_path: Path) -> None:
    """The labels follow the reasons :func:`retire_reason` really gives (not a copy of them)."""
    instance = Instance(browser=None, marker="m", pid=None)  # type: ignore[arg-type]
    instance.contexts_created = 5
    assert recycle_reason(retire_reason(instance, make_settings(tmp_path, browser_max_contexts=5),
                                        check_rss=False) or "") == "contexts"
    instance.contexts_created, instance.launched_at = 0, time.monotonic() - 120
    assert recycle_reason(retire_reason(instance, make_settings(tmp_path, browser_max_age_s=60),
                                        check_rss=False) or "") == "age"
    assert recycle_reason("process tree RSS 2048 MB") == "rss"
    assert recycle_reason("something new") == "other"


def test_error_codes_outside_browserqs_own_become_other() -> None:
    assert code_label("SELECTOR_NOT_FOUND") == "SELECTOR_NOT_FOUND"
    assert code_label(None) == ""
    assert code_label("https://example.com/run/123") == "other"
