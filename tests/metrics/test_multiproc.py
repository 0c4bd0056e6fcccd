"""Multiprocess mode as a prefork worker uses it, in a subprocess of its own (this test process's
prometheus_client stays in-memory): the metrics module is imported *before* the directory is set,
as Celery's app load does; forked children record; a child that exits cleanly and one that is
SIGKILLed both leave the gauge sums, and their counters stay."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import REPO
from tests.metrics.scrape import Samples

SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path

    from browserq.metrics import definitions as m  # first, as at a worker's app load
    from browserq.metrics import multiproc
    from browserq.metrics.collectors import LiveProcessesCollector
    from prometheus_client import CollectorRegistry, generate_latest

    directory = Path(sys.argv[1])
    multiproc.use_directory(directory)

    def child(then):
        pid = os.fork()
        if pid == 0:
            m.BROWSER_LAUNCHES.labels("start").inc()
            m.contexts_in_use(3)
            then()
        return pid

    def scrape(tag):
        registry = CollectorRegistry()
        registry.register(LiveProcessesCollector(directory))
        print(f"--- {tag}")
        print(generate_latest(registry).decode())

    def exit_cleanly():
        multiproc.process_exited(os.getpid())
        os._exit(0)

    def wait_to_be_killed():
        (directory / "recorded").touch()
        time.sleep(120)
        os._exit(1)

    os.waitpid(child(exit_cleanly), 0)
    killed = child(wait_to_be_killed)
    while not (directory / "recorded").exists():
        time.sleep(0.01)
    scrape("one alive")
    os.kill(killed, signal.SIGKILL)
    os.waitpid(killed, 0)
    scrape("none alive")
""")


def run(tmp_path: Path) -> dict[str, Samples]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=REPO, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    parts = done.stdout.split("--- ")[1:]
    return {part.split("\n", 1)[0]: Samples(part.split("\n", 1)[1]) for part in parts}


def test_children_record_into_files_and_dead_ones_leave_the_gauges(tmp_path: Path) -> None:
    scrapes = run(tmp_path)
    alive, gone = scrapes["one alive"], scrapes["none alive"]
    assert alive.get("browserq_browser_launches_total", kind="start") == 2
    assert alive.get("browserq_browser_contexts", state="in_use") == 3  # the clean one left already
    assert gone.get("browserq_browser_launches_total", kind="start") == 2  # counters stay
    assert not gone.get("browserq_browser_contexts", state="in_use")  # the killed one was reaped
    assert not list(tmp_path.glob("gauge_livesum_*.db"))
    assert list(text_string_to_metric_families(alive.text))
