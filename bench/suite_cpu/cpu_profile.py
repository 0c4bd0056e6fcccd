"""A pytest plugin: the wall time and the CPU time of each test, Chromium and subprocesses included.

Each xdist worker (or the lone pytest process) moves itself into a cgroup of its own at its
first test; every process it starts afterwards — Chromium, the Playwright driver, a Celery
worker, a ``browserq`` CLI — is born in it, so the cgroup's CPU counter taken before and after a
test is what that test cost, down to the last child (``RUSAGE_CHILDREN`` would miss every
grandchild and every process still running). Needs a writable cgroup (root: cgroup v1 ``cpuacct``
or v2); without one it falls back to this process and its reaped children, and says so.

Loaded by ``bench/suite_cpu.py`` with ``-p cpu_profile``; writes one JSON line per test to
``$SUITE_CPU_DIR/<worker>.jsonl``.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any, TextIO

import pytest
from cpu_groups import SUITE_CPU_PREFIX, CpuGroup


class _Counter:
    """CPU-seconds of this process's cgroup (made for it), or of itself and its reaped children."""

    def __init__(self, name: str) -> None:
        group = CpuGroup.make(f"{SUITE_CPU_PREFIX}{name}")
        if group is not None and group.adopt([os.getpid()]):
            self.read, self.source = group.seconds, group.version
        else:
            self.read, self.source = _rusage, "rusage"


def _rusage() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class _Recorder:
    def __init__(self) -> None:
        self.counter: _Counter | None = None
        self.out: TextIO | None = None

    def start(self) -> tuple[_Counter, TextIO]:
        if self.counter is None or self.out is None:
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            self.counter = _Counter(worker)
            folder = Path(os.environ.get("SUITE_CPU_DIR", "."))
            self.out = (folder / f"{worker}.jsonl").open("a", encoding="utf-8")
        return self.counter, self.out


_recorder = _Recorder()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Generator[None, None, None]:
    counter, out = _recorder.start()
    began, started, cpu = time.monotonic(), time.time(), counter.read()
    yield
    line = {"id": item.nodeid, "wall": time.monotonic() - began, "cpu": counter.read() - cpu,
            "source": counter.source, "started": started}
    out.write(json.dumps(line) + "\n")
    out.flush()
