"""What each pytest process keeps to itself, so that xdist workers (and other people's test runs on
the same machine) never meet: a Redis server and a temporary directory.

The rest is isolated where it is made: PostgreSQL databases are scratch databases named after the
process (:mod:`tests.support.postgres`), Celery queues carry a random suffix, servers listen on
free ports (:func:`tests.support.http.free_port`), files go to pytest's ``tmp_path`` (one base
directory per xdist worker). docs/testing.md describes the whole scheme.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import warnings
from pathlib import Path

import pytest

from tests.support.processes import cmdline, is_alive, signal_pid
from tests.support.redis import use_server
from tests.support.servers import RedisServer

PREFIX = "bq-tests-"

_KEY = pytest.StashKey["Isolation"]()


class Isolation:
    """This process's own Redis and ``TMPDIR`` (which Playwright's driver, Chromium and the worker
    subprocesses inherit: their download folders and scratch files are this process's alone)."""

    def __init__(self, worker: str) -> None:
        # pytest's own tmp_path base stays where it was (kept after the run, as usual).
        os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
        reap_orphans(Path(tempfile.gettempdir()))
        self.tmp = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{worker}-"))
        (self.tmp / "owner").write_text(str(os.getpid()))
        self.saved_tmpdir = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = str(self.tmp)
        tempfile.tempdir = None  # gettempdir() reads TMPDIR again
        self.redis: RedisServer | None = None
        if shutil.which("redis-server") and shutil.which("redis-cli"):
            self.redis = RedisServer().start()
            use_server(self.redis.url)
        else:
            warnings.warn("no redis-server here: the tests share the machine's Redis (run them with -n 0)",
                          stacklevel=1)

    def close(self) -> None:
        if self.redis is not None:
            self.redis.close()
            use_server(None)
        if self.saved_tmpdir is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = self.saved_tmpdir
        tempfile.tempdir = None
        shutil.rmtree(self.tmp, ignore_errors=True)


def reap_orphans(root: Path) -> None:
    """Stop the servers and remove the directories of test processes that died without cleaning
    up (killed by a timeout or a second Ctrl-C): their ``redis-server`` daemons and RabbitMQ nodes
    outlive them otherwise."""
    for directory in root.glob(f"{PREFIX}*"):
        try:
            owner = int((directory / "owner").read_text())
        except (OSError, ValueError):
            continue  # not one of ours, or still being made
        if is_alive(owner):
            continue
        for pidfile in [*directory.glob("bq-redis-*/redis.pid"), *directory.glob("bq-rabbit-*/rabbit.pid")]:
            try:
                pid = int(pidfile.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            if b"redis-server" in cmdline(pid) or b"beam" in cmdline(pid):
                signal_pid(pid, signal.SIGKILL)
        shutil.rmtree(directory, ignore_errors=True)


def is_xdist_controller(config: pytest.Config) -> bool:
    """The process that only hands tests to xdist workers (it runs none itself)."""
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def begin(config: pytest.Config) -> None:
    if not is_xdist_controller(config):
        config.stash[_KEY] = Isolation(os.environ.get("PYTEST_XDIST_WORKER", "main"))


def end(config: pytest.Config) -> None:
    isolation = config.stash.get(_KEY, None)
    if isolation is not None:
        isolation.close()
