"""Queue depth read at scrape time from the real brokers (Redis lists, RabbitMQ's passive
declare), an unknown queue, and a broker that is down: said in ``browserq_broker_up`` quickly."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from kombu import Connection
from prometheus_client import CollectorRegistry, generate_latest

from browserq.metrics.collectors import (
    SCRAPE_TIMEOUT_S,
    ProxyCooldownCollector,
    QueueDepthCollector,
)
from browserq.proxies import ProxyConfig, ProxyHealth, make_redis
from tests.conftest import make_settings
from tests.e2e.conftest import AMQP_URL
from tests.metrics.scrape import Samples
from tests.support.http import free_port
from tests.support.redis import BROKER_DB, PROXIES_DB, redis_url


def scrape(collector: object) -> Samples:
    registry = CollectorRegistry()
    registry.register(collector)
    return Samples(generate_latest(registry).decode())


@pytest.mark.parametrize("url", [redis_url(BROKER_DB), AMQP_URL], ids=["redis", "rabbitmq"])
def test_queue_depth_counts_the_waiting_messages(url: str) -> None:
    full, empty, unknown = (f"bq_metrics_{uuid.uuid4().hex[:8]}_{n}" for n in ("full", "empty", "unknown"))
    # publisher confirms: each put returns once RabbitMQ holds the message, so another
    # connection's passive declare counts all three (without them it once counted 1)
    with Connection(url, transport_options={"confirm_publish": True}) as connection:
        queues = {name: connection.SimpleQueue(name) for name in (full, empty)}
        for n in range(3):
            queues[full].put({"n": n})
        collector = QueueDepthCollector(lambda: Connection(url), [full, empty, unknown])
        try:
            samples = scrape(collector)
            assert samples.get("browserq_queue_depth", queue=full) == 3
            assert samples.get("browserq_queue_depth", queue=empty) == 0
            # Redis keeps no key for an empty queue: 0; RabbitMQ has no such queue: nothing said
            missing = samples.get("browserq_queue_depth", queue=unknown)
            assert missing == (0 if url.startswith("redis") else None)
            assert samples.get("browserq_broker_up") == 1
            queues[full].queue(connection.default_channel).get().ack()  # basic_get: no consumer prefetching
            assert scrape(collector).get("browserq_queue_depth", queue=full) == 2  # the same connection
        finally:
            collector.close()
            for queue in queues.values():
                queue.close()
    with Connection(url) as connection:
        for name in (full, empty):
            connection.default_channel.queue_delete(name)


@pytest.mark.parametrize("scheme", ["redis", "amqp"])
def test_a_broker_that_is_down_is_a_zero_not_a_hang(scheme: str) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0" if scheme == "redis" else f"amqp://guest:guest@127.0.0.1:{free_port()}//"
    collector = QueueDepthCollector(lambda: Connection(url, connect_timeout=SCRAPE_TIMEOUT_S), ["q"])
    started = time.monotonic()
    samples = scrape(collector)
    assert samples.get("browserq_broker_up") == 0
    assert samples.get("browserq_queue_depth", queue="q") is None
    assert time.monotonic() - started < 10 * SCRAPE_TIMEOUT_S


def test_proxies_cooling_down_are_read_from_the_shared_health(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, proxies=["http://10.77.0.1:3128", "http://10.77.0.2:3128"],
                             proxy_redis_url=redis_url(PROXIES_DB))
    config = ProxyConfig.from_settings(settings)
    health = ProxyHealth.from_config(config, client=make_redis(config.redis_url))
    health.reset(config.proxies)
    try:
        collector = ProxyCooldownCollector(settings)
        assert scrape(collector).get("browserq_proxies_cooling_down") == 0
        health.record_failure(config.proxies[0], "refused")  # another worker's report: shared in Redis
        samples = scrape(collector)
        assert samples.get("browserq_proxies") == 2 and samples.get("browserq_proxies_cooling_down") == 1
    finally:
        health.reset(config.proxies)
