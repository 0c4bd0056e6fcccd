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
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, TextIO

import pytest

_V1 = Path("/sys/fs/cgroup/cpuacct")
_V2 = Path("/sys/fs/cgroup")
#: The cgroups' names start so (``bench/suite_cpu.py`` removes them once pytest is done).
PREFIX = "suite-cpu-"


class _Counter:
    """CPU-seconds of this process's cgroup (made for it), or of itself and its reaped children."""

    def __init__(self, name: str) -> None:
        self.source, self.read = "rusage", _rusage
        for source, make in (("v1", _v1), ("v2", _v2)):
            try:
                self.read, self.source = make(name), source
                return
            except OSError:
                continue


def _v1(name: str) -> Callable[[], float]:
    group = _V1 / f"{PREFIX}{name}"
    group.mkdir(exist_ok=True)
    (group / "cgroup.procs").write_text(str(os.getpid()))
    usage = group / "cpuacct.usage"
    return lambda: int(usage.read_text()) / 1e9


def _v2(name: str) -> Callable[[], float]:
    if not (_V2 / "cgroup.controllers").exists():
        raise OSError("no cgroup v2 hierarchy")
    group = _V2 / f"{PREFIX}{name}"
    group.mkdir(exist_ok=True)
    (group / "cgroup.procs").write_text(str(os.getpid()))
    stat = group / "cpu.stat"

    def read() -> float:
        fields = dict(line.split() for line in stat.read_text().splitlines())
        return int(fields["usage_usec"]) / 1e6

    return read


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
    began, cpu = time.monotonic(), counter.read()
    yield
    line = {"id": item.nodeid, "wall": time.monotonic() - began, "cpu": counter.read() - cpu,
            "source": counter.source}
    out.write(json.dumps(line) + "\n")
    out.flush()
