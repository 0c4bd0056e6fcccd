"""CPU-seconds by kind of process (Chromium's browser, renderers, GPU…, Playwright's driver, Python),
for a window of time, counting processes that were born and died inside it.

A cgroup gives one total; this splits it. Processes alive at both ends are read from ``/proc``;
the ones that exit in between (a renderer per context, a CLI command, a Celery child) from the
kernel's BSD process accounting (``acct(2)``, root only): one record per exiting process with
its whole CPU. A sampler thread reads every process's command line and parent every
``sample_s``, because the accounting record has only a 16-byte name (a Chromium process is named
after its last thread) — a process that lived less than that may go unnamed ("unsampled").

    with ProcessCpu(root_pid=child.pid) as cpu:    # None: every process on the machine
        ...
    print(cpu.by_kind())                           # {"chromium:renderer": 8.2, "node": 2.1, …}

Used by ``cpu_by_process.py`` and ``suite_cpu.py --by-process``. Linux only; nothing is asserted.
"""

from __future__ import annotations

import ctypes
import os
import re
import struct
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

#: ``struct acct_v3`` (linux/acct.h): 64 bytes, times as ``comp_t`` clock ticks (AHZ = 100).
_ACCT_V3 = struct.Struct("<BBHIIIIIIfHHHHHHHH16s")
_AHZ = 100.0
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Seen:
    """A process as the sampler saw it (its command line the last one seen: a fork of Playwright's
    driver or of Debian's ``/bin/sh`` wrapper becomes Chromium when it execs)."""

    ppid: int
    cmdline: str
    cpu_s: float


#: A process: its pid and its start (clock ticks since boot), so a reused pid is another process.
Key = tuple[int, int]


def _comp_t(value: int) -> int:
    """A ``comp_t``: 13-bit mantissa, 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (3 * ((value >> 13) & 7))


def _boot_time() -> float:
    line = next(row for row in Path("/proc/stat").read_text().splitlines() if row.startswith("btime "))
    return float(line.split()[1])


def _read_proc() -> dict[Key, Seen]:
    seen: dict[Key, Seen] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / _TICK
        text = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
        seen[(int(entry), int(fields[19]))] = Seen(int(fields[1]), text, cpu)
    return seen


def kind_of(cmdline: str, name: str = "") -> str:
    """What a process is, from its command line (``name``: the accounting record's, if no line)."""
    if chromium_type := re.search(r"--type=(\S+)", cmdline):
        kind = chromium_type.group(1)
        if kind == "utility":
            sub = re.search(r"--utility-sub-type=([\w.]+)", cmdline)
            kind += ":" + (sub.group(1).split(".")[0] if sub else "?")
        return f"chromium:{kind}"
    if re.search(r"chrom(e|ium)", cmdline.split(" ")[0] if cmdline else "") or "headless_shell" in cmdline:
        return "chromium:browser"
    if "crashpad" in cmdline:
        return "chromium:crashpad"
    if "/driver/node" in cmdline or "run-driver" in cmdline:
        return "node (Playwright driver)"
    if "python" in cmdline.split(" ")[0] or cmdline.startswith(("celery", "browserq")):
        return f"python: {_python_role(cmdline)}"
    if cmdline:
        return "other: " + Path(cmdline.split(" ")[0]).name
    return f"unsampled ({name})"


def _python_role(cmdline: str) -> str:
    """Which Python program: a Celery worker (and its prefork children, forked with its command
    line), a ``browserq`` command, pytest (xdist workers run ``exec(eval(...))``), or other."""
    if "celery" in cmdline or re.search(r"browserq(\.cli)? worker\b", cmdline):
        return "Celery worker"
    if "browserq.cli" in cmdline or "bin/browserq" in cmdline:
        return "browserq command"
    if "pytest" in cmdline or "exec(eval(sys.stdin" in cmdline:
        return "pytest"
    if module := re.search(r" -m ([\w.]+)", cmdline):
        return f"-m {module.group(1)}"  # e.g. the suite's CLI zygote and the commands it forks
    return "-c …" if " -c " in cmdline else "other"


@dataclass
class ProcessCpu:
    """CPU by process over the ``with`` block (see the module's docstring)."""

    root_pid: int | None = None
    sample_s: float = 0.1
    seen: dict[Key, Seen] = field(default_factory=dict)
    used: Counter[Key] = field(default_factory=Counter)
    names: dict[Key, str] = field(default_factory=dict)
    _before: dict[Key, Seen] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _file: Path | None = None

    def __enter__(self) -> ProcessCpu:
        fd, name = tempfile.mkstemp(prefix="bq_acct_")
        os.close(fd)
        self._file = Path(name)
        self._before = _read_proc()
        self._note(self._before)
        _acct(str(self._file))
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        after = _read_proc()
        _acct(None)
        self._stop.set()
        self._sampler.join()
        self._note(after)
        for key, now in after.items():
            self.used[key] += now.cpu_s - (self._before[key].cpu_s if key in self._before else 0.0)
        assert self._file is not None
        data = self._file.read_bytes()
        self._file.unlink()
        boot = _boot_time()
        starts: dict[int, list[int]] = {}
        for pid, start in self.seen:
            starts.setdefault(pid, []).append(start)
        for offset in range(0, len(data) - _ACCT_V3.size + 1, _ACCT_V3.size):
            record = _ACCT_V3.unpack_from(data, offset)
            pid, ppid, began = record[6], record[7], record[8]
            # The sighting that started within 2 s of the record's start (whole seconds there).
            near = [s for s in starts.get(pid, []) if abs(boot + s / _TICK - began) <= 2]
            key = (pid, near[0]) if near else (pid, -1)
            if key in after:  # a live process took the pid within 2 s: its CPU came from /proc
                continue
            cpu = (_comp_t(record[10]) + _comp_t(record[11])) / _AHZ
            self.used[key] += cpu - (self._before[key].cpu_s if key in self._before else 0.0)
            self.names[key] = record[18].split(b"\0")[0].decode(errors="replace")
            if key not in self.seen:
                self.seen[key] = Seen(ppid, "", cpu)

    def _note(self, sighting: dict[Key, Seen]) -> None:
        """Record a sighting: the parent from the first (an orphan's is pid 1 later), the command
        line from the last non-empty one (exec replaces it)."""
        for key, now in sighting.items():
            first = self.seen.get(key)
            if first is None:
                self.seen[key] = now
            elif now.cmdline and now.cmdline != first.cmdline:
                self.seen[key] = Seen(first.ppid, now.cmdline, now.cpu_s)

    def _sample(self) -> None:
        while not self._stop.wait(self.sample_s):
            self._note(_read_proc())

    def family(self) -> set[Key]:
        """``root_pid`` and every process seen below it (every process when it is None)."""
        if self.root_pid is None:
            return set(self.used)
        pids, grew = {self.root_pid}, True
        while grew:
            grew = False
            for (pid, _), s in self.seen.items():
                if pid not in pids and s.ppid in pids:
                    pids.add(pid)
                    grew = True
        return {key for key in self.used if key[0] in pids}

    def by_kind(self) -> dict[str, float]:
        """CPU-seconds per :func:`kind_of`, largest first."""
        totals: Counter[str] = Counter()
        for key in self.family():
            totals[self._kind(key)] += self.used[key]
        return dict(sorted(totals.items(), key=lambda item: -item[1]))

    def count_by_kind(self) -> dict[str, int]:
        """How many processes of each :func:`kind_of` ran (how often a worker, a browser, a
        driver was started: a cost per start is only half of the story)."""
        return dict(Counter(self._kind(key) for key in self.family()))

    def _kind(self, key: Key) -> str:
        s = self.seen.get(key)
        return kind_of(s.cmdline if s else "", self.names.get(key, ""))


def _acct(path: str | None) -> None:
    """Turn process accounting on (into ``path``) or off."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(path.encode() if path else None) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"acct({path!r}) failed: {os.strerror(errno)} (process accounting needs root)")
