"""The machine's Redis: which database number each suite owns, waiting until it answers, and
emptying what a test wrote (by key prefix or by database; never FLUSHALL - others share it).

A suite gets a database of its own where it must see "every key": the secrets test scans all keys
of its database for leaks, the limits and proxy tests delete their prefixes.
"""

from __future__ import annotations

import time

import pytest
import redis

SERVER = "redis://127.0.0.1:6379"
#: Database numbers in use (one place, so two suites never pick the same one).
BROKER_DB = 0  # Celery broker / result backend of the e2e and chaos workers
PROXIES_DB = 7  # tests/proxies (BROWSERQ_TEST_PROXY_REDIS)
LIMITS_DB = 8  # tests/limits (BROWSERQ_TEST_LIMITS_REDIS_URL)
REALISM_DB = 9  # proxy state of tests/runner/test_realism.py and the CLI proxies test
SECRETS_DB = 14  # tests/secrets/test_everywhere.py: every key of it is checked for leaks


def redis_url(db: int) -> str:
    return f"{SERVER}/{db}"


def wait_for_redis(url: str, timeout_s: float = 10.0, interval_s: float = 0.5) -> None:
    """Return once Redis at ``url`` answers PING; another suite may be restarting the shared Redis
    right now (the chaos tests do), so a refusal is retried until ``timeout_s``."""
    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError as e:
                if time.monotonic() > deadline:
                    pytest.fail(f"Redis at {url} is not reachable: {e}", pytrace=False)
                time.sleep(interval_s)
    finally:
        client.close()


def delete_prefix(url: str, prefix: str) -> None:
    """Delete every key starting with ``prefix`` (best effort: a test's cleanup must not fail it)."""
    try:
        client = redis.Redis.from_url(url)
        keys = list(client.scan_iter(match=prefix + "*"))
        if keys:
            client.delete(*keys)
        client.close()
    except redis.RedisError:
        pass


def empty_database(client: redis.Redis) -> None:
    """Delete every key of the client's database, key by key (a leftover of an earlier run must
    not count as this run's leak; FLUSHALL would empty the other suites' databases too)."""
    for key in client.scan_iter(count=500):
        client.delete(key)
