"""CPU-seconds of a set of processes and of every process they start, counted by the kernel.

Why a cgroup: reading ``/proc/<pid>/stat`` of a tree misses every process that ends in between
unless its parent reaps it *and* is in the tree — and Chromium's renderers (one per closed context)
are not counted that way: a tree that closes contexts (browserq's runs, a script with a fresh
context per job) came out with *negative* CPU for its browser processes. A cgroup counts every
process born in it until the group is removed, whoever reaps it. Needs a writable cgroup
hierarchy (root: cgroup v1 ``cpuacct`` or v2); :meth:`CpuGroup.make` returns None elsewhere.

    group = CpuGroup.make("scaling-threads-8")   # None without a writable cgroup
    group.adopt(pids)                            # these processes; their children are born in it
    before = group.seconds(); ...; used = group.seconds() - before
    group.remove()                               # once its processes are gone
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

V1 = Path("/sys/fs/cgroup/cpuacct")
V2 = Path("/sys/fs/cgroup")
#: The groups of ``suite_cpu.py``'s plugin (one per xdist worker), removed when pytest is done.
SUITE_CPU_PREFIX = "suite-cpu-"


class CpuGroup:
    """One cgroup and its CPU counter (``cpuacct.usage`` in v1, ``usage_usec`` of ``cpu.stat`` in v2)."""

    def __init__(self, path: Path, read: Callable[[], float], version: str) -> None:
        self.path, self._read, self.version = path, read, version

    @classmethod
    def make(cls, name: str) -> CpuGroup | None:
        """The group ``name`` (made if missing) in the first writable hierarchy, or None."""
        for version, root in (("v1", V1), ("v2", V2)):
            if version == "v2" and not (root / "cgroup.controllers").exists():
                continue
            path = root / name
            try:
                path.mkdir(exist_ok=True)
            except OSError:
                continue
            read = partial(_v1_seconds, path / "cpuacct.usage") if version == "v1" else partial(
                _v2_seconds, path / "cpu.stat")
            return cls(path, read, version)
        return None

    def adopt(self, pids: Iterable[int]) -> int:
        """Move ``pids`` (whole processes) into the group; one that has exited is skipped.
        Returns how many were moved."""
        procs, moved = self.path / "cgroup.procs", 0
        for pid in pids:
            try:
                procs.write_text(str(pid))
            except OSError:
                continue
            moved += 1
        return moved

    def seconds(self) -> float:
        return self._read()

    def remove(self) -> bool:
        """Remove the group once its processes are gone (one still running keeps it: False)."""
        return _remove(self.path)


def _v1_seconds(usage: Path) -> float:
    return int(usage.read_text()) / 1e9


def _v2_seconds(stat: Path) -> float:
    fields = dict(line.split() for line in stat.read_text().splitlines())
    return int(fields["usage_usec"]) / 1e6


def _remove(path: Path) -> bool:
    try:
        path.rmdir()
    except OSError:
        return not path.exists()
    return True


def remove_groups(prefix: str) -> list[Path]:
    """Remove every group named ``prefix…``; returns those left (a straggler still runs in them)."""
    return [path for root in (V1, V2) for path in root.glob(f"{prefix}*") if not _remove(path)]
