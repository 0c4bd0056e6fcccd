"""What each pytest process keeps to itself, so that xdist workers (and other people's test runs on
the same machine) never meet: a Redis server and a temporary directory. And the browser engine the
suite runs on (:func:`suite_engine`), which every browser it starts inherits.

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

from browserq import engines
from tests.support.processes import cmdline, is_alive, signal_pid
from tests.support.redis import use_server
from tests.support.servers import RedisServer

PREFIX = "bq-tests-"

#: Chooses the suite's engine: ``TEST_BROWSER=chromium ./scripts/test.sh`` runs every test on it.
ENGINE_VARIABLE = "TEST_BROWSER"


def suite_engine() -> str:
    """The engine the suite's browsers run on: ``TEST_BROWSER``, else the headless shell where it
    is installed, else Chromium.

    Why the shell by default: Chromium is more than half of the suite's CPU, and the suite is bound
    by CPU (docs/testing.md). The shell does the same pages for about a third of a launch's CPU.
    What only the full browser shows (stealth, the realism of a visitor, the engine itself) is
    tested on it whatever this says: those tests carry the ``full_chromium`` mark.
    """
    chosen = os.environ.get(ENGINE_VARIABLE, "").strip()
    if chosen:
        return engines.usable_engine(chosen)
    shell_found = engines.find_system(engines.HEADLESS_SHELL) or engines.playwright_download(engines.HEADLESS_SHELL)
    return engines.HEADLESS_SHELL if shell_found else engines.CHROMIUM

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
        # Every browser of this process and of the processes it starts (tests/support/workers.py's
        # browserq_env keeps this one BROWSERQ_ variable) runs on the suite's engine.
        self.saved_engine = os.environ.get("BROWSERQ_BROWSER")
        os.environ["BROWSERQ_BROWSER"] = suite_engine()
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
        for name, saved in (("TMPDIR", self.saved_tmpdir), ("BROWSERQ_BROWSER", self.saved_engine)):
            if saved is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = saved
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
