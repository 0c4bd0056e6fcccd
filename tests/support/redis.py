"""The suite's Redis: which server and database number each suite uses, waiting until it
answers, and emptying what a test wrote (by key prefix or by database; never FLUSHALL).

The server is this test process's own ``redis-server`` (tests/conftest.py starts one per pytest
process, so per xdist worker: :mod:`tests.support.servers`), else the machine's at 127.0.0.1:6379.
Within it a suite gets a database of its own where it must see "every key": the secrets test scans
all keys of its database for leaks, the limits and proxy tests delete their prefixes. Two xdist
workers never share a server, so the fixed numbers below never collide across workers.
"""

from __future__ import annotations

import os
import time

import pytest
import redis

#: The machine's Redis (scripts/services.sh), used when this process has none of its own.
MACHINE_SERVER = "redis://127.0.0.1:6379"
#: The environment variable that names this process's own server (inherited by subprocesses).
SERVER_VARIABLE = "BQ_TEST_REDIS_SERVER"
#: Database numbers in use (one place, so two suites never pick the same one).
BROKER_DB = 0  # Celery broker / result backend of the e2e and chaos workers
PROXIES_DB = 7  # tests/proxies (BROWSERQ_TEST_PROXY_REDIS)
LIMITS_DB = 8  # tests/limits (BROWSERQ_TEST_LIMITS_REDIS_URL)
REALISM_DB = 9  # proxy state of tests/runner/test_realism.py and the CLI proxies test
SECRETS_DB = 14  # tests/secrets/test_everywhere.py: every key of it is checked for leaks


def server() -> str:
    """``redis://host:port`` of the Redis the suite uses in this process."""
    return os.environ.get(SERVER_VARIABLE) or MACHINE_SERVER


def use_server(url: str | None) -> None:
    """Point :func:`redis_url` at ``url`` (``None``: back to the machine's Redis)."""
    if url is None:
        os.environ.pop(SERVER_VARIABLE, None)
    else:
        os.environ[SERVER_VARIABLE] = url


def redis_url(db: int) -> str:
    return f"{server()}/{db}"


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
