"""Fixtures for the proxy tests: Redis DB 7 (tolerating a brief restart), a per-test namespace."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from browserq.proxies import Proxy, ProxyHealth, ProxyRotator, parse_proxy
from tests.support.redis import PROXIES_DB, redis_url, wait_for_redis

REDIS_URL = os.environ.get("BROWSERQ_TEST_PROXY_REDIS", redis_url(PROXIES_DB))
PASSWORD = "hunter2-S3cret"  # the credential every test checks never leaks


def connect_redis() -> redis.Redis:
    """A client on DB 7 whose commands ride out a Redis restart of a few seconds."""
    wait_for_redis(REDIS_URL)  # another suite may be restarting the shared Redis right now
    return redis.Redis.from_url(
        REDIS_URL,
        decode_responses=True,
        socket_timeout=5,
        socket_connect_timeout=2,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.1), 10),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
    )


@pytest.fixture(scope="session")
def redis_client() -> redis.Redis:
    return connect_redis()


@pytest.fixture
def namespace(redis_client: redis.Redis) -> Iterator[str]:
    ns = f"bqtest:proxy:{uuid.uuid4().hex[:10]}"
    yield ns
    keys = list(redis_client.scan_iter(f"{ns}:*"))
    if keys:
        redis_client.delete(*keys)


@pytest.fixture
def make_health(redis_client: redis.Redis, namespace: str) -> Callable[..., ProxyHealth]:
    def make(**kwargs: Any) -> ProxyHealth:
        options: dict[str, Any] = {
            "cooldown_s": 0.2,
            "cooldown_max_s": 0.8,
            "jitter": 0.0,
            "namespace": namespace,
        }
        options.update(kwargs)
        client = options.pop("client", redis_client)
        return ProxyHealth(client, **options)

    return make


@pytest.fixture
def proxies() -> list[Proxy]:
    return [
        parse_proxy("http://alice:" + PASSWORD + "@10.0.0.1:3128#region=de", "p0"),
        parse_proxy("http://10.0.0.2:3128", "p1"),
        parse_proxy("socks5://10.0.0.3:1080", "p2"),
    ]


@pytest.fixture
def make_rotator(
    make_health: Callable[..., ProxyHealth], proxies: list[Proxy]
) -> Callable[..., ProxyRotator]:
    def make(
        strategy: str = "round_robin", health: ProxyHealth | None = None, **kwargs: Any
    ) -> ProxyRotator:
        return ProxyRotator(
            kwargs.pop("proxies", proxies), health or make_health(), strategy, **kwargs
        )

    return make
