"""Readiness from per-process markers: the ready file while one live process is warm, ``/ready``
200/503 on the metrics server, markers of processes that are gone dropped, nothing left after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter

from browserq.metrics.readiness import ReadyWatch, mark_cold, mark_warm, marker_base
from browserq.metrics.server import MetricsServer
from tests.conftest import make_settings
from tests.metrics.scrape import get, scrape
from tests.support.http import free_port


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_the_ready_file_follows_the_warm_processes(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ready_file=tmp_path / "run" / "ready")
    base = marker_base(settings)
    assert base == tmp_path / "run" / "ready"
    watch = ReadyWatch(base, settings.ready_file, processes=2)
    ready = settings.ready_file
    assert not watch.check().ready and not ready.exists()

    mark_warm(settings)  # this process: warm
    stale = base.with_name(f"ready.{dead_pid()}")
    stale.touch()  # a process killed without removing its marker
    state = watch.check()
    assert state.warm == 1 and state.describe() == "ready: 1 of 2 worker processes have a warm browser"
    assert ready.read_text() == "1\n" and not stale.exists()

    mark_cold(settings)
    assert not watch.check().ready and not ready.exists()

    mark_warm(settings)
    watch.check()
    watch.stop()  # the worker stops: neither the file nor a marker stays
    assert not ready.exists() and not list(ready.parent.glob("ready.*"))


def test_no_readiness_without_a_ready_file_or_metrics(tmp_path: Path) -> None:
    assert marker_base(make_settings(tmp_path)) is None
    mark_warm(make_settings(tmp_path))  # a no-op, never an error
    assert not list(tmp_path.iterdir())


def test_the_server_answers_ready_and_metrics(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    Counter("browserq_test_things", "Things.", registry=registry).inc(3)
    base = tmp_path / "ready"
    watch = ReadyWatch(base, None, processes=1)
    server = MetricsServer(free_port(), registry, watch.check, address="127.0.0.1").start()
    try:
        status, body = get(server.port, "/ready")
        assert status == 503 and body == "not ready: 0 of 1 worker processes have a warm browser\n"
        base.with_name(f"ready.{os.getpid()}").touch()
        assert get(server.port, "/ready")[0] == 200
        assert scrape(server.port).get("browserq_test_things_total") == 3
    finally:
        server.stop()
