"""Processes as Linux shows them in ``/proc``: parents, liveness, command lines, environments, the
Chromium and Playwright driver processes browserq starts, and killing whole process groups.

Why ``/proc`` and not psutil: these tests check exactly what the kernel sees (a zombie is dead,
an orphan re-parented to init is not a child any more), with nothing installed for it.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # an annotation only: processes.py needs nothing of the zygote at run time
    from tests.support.zygote import ForkedProcess

PROC = Path("/proc")
#: The marker browserq passes to every Chromium it launches, and what a browser's helper
#: processes (renderer, GPU, zygote) carry that the browser process itself does not.
BROWSER_MARKER = b"--browserq-instance="
HELPER_MARKER = b"--type="
DRIVER_MARKER = b"playwright/driver"


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (``[state, ppid, …]``), or None
    if there is no such process."""
    try:
        return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def parent_of(pid: int) -> int | None:
    fields = stat_fields(pid)
    return int(fields[1]) if fields else None


def is_alive(pid: int) -> bool:
    """The process exists and is not a zombie (a zombie has exited, only its entry is left)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def alive(pids: Iterable[int]) -> set[int]:
    return {pid for pid in pids if is_alive(pid)}


def cmdline(pid: int) -> bytes:
    """The NUL-separated command line (empty if the process is gone)."""
    try:
        return (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def all_pids() -> Iterator[int]:
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            yield int(entry.name)


def tagged_pids(tag: str, variable: str = "CHAOS_TAG") -> set[int]:
    """Live processes whose environment has ``variable=tag``: everything started with that
    environment, including orphans that no longer descend from the process that started them."""
    needle = f"{variable}={tag}".encode()
    found = set()
    for pid in all_pids():
        try:
            environ = (PROC / str(pid) / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and is_alive(pid):
            found.add(pid)
    return found


def browserq_pids() -> set[int]:
    """Chromium processes launched by any browserq runtime, plus Playwright driver processes."""
    return {pid for pid in all_pids() if BROWSER_MARKER in (cmd := cmdline(pid)) or DRIVER_MARKER in cmd}


def is_browser_root(command: bytes) -> bool:
    """A browserq Chromium's browser process (not one of its renderer/GPU helpers)."""
    return BROWSER_MARKER in command and HELPER_MARKER not in command


def browser_roots(pids: Iterable[int]) -> list[int]:
    """The browser processes among ``pids``: one per Chromium.

    A child Chromium has just forked (a zygote or helper between ``fork`` and ``exec``) still
    carries its parent's command line, so it would look like a second browser; a process whose
    parent is itself a browserq Chromium is therefore never a root.
    """
    return [pid for pid in pids
            if is_browser_root(cmdline(pid)) and BROWSER_MARKER not in cmdline(parent_of(pid) or 0)]


def driver_pids(parent: int) -> set[int]:
    """Playwright driver (node) processes whose parent is ``parent``."""
    return {pid for pid in all_pids() if parent_of(pid) == parent and DRIVER_MARKER in cmdline(pid)}


def descends_from(pid: int, ancestor: int) -> bool:
    """``pid`` is ``ancestor`` or below it (an orphan re-parented to init is not)."""
    for _ in range(64):
        if pid == ancestor:
            return True
        if not pid or pid == 1:
            return False
        pid = parent_of(pid) or 0
    return False


def descendants(root: int) -> dict[int, bytes]:
    """pid → command line of every live process below ``root`` (zombies left out)."""
    parents: dict[int, int] = {}
    commands: dict[int, bytes] = {}
    for pid in all_pids():
        fields = stat_fields(pid)
        command = cmdline(pid)
        if fields is None or fields[0] == "Z":
            continue
        parents[pid], commands[pid] = int(fields[1]), command
    found: dict[int, bytes] = {}
    for pid in parents:
        ancestor = pid
        while ancestor in parents and ancestor != root:
            ancestor = parents[ancestor]
        if ancestor == root and pid != root:
            found[pid] = commands[pid]
    return found


def signal_pid(pid: int, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to ``pid`` if it still exists."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to a whole process group (a worker, its children, their browsers), if it exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def stop(proc: subprocess.Popen | ForkedProcess, timeout_s: float = 60, *, group: bool = False, sig: int = signal.SIGTERM) -> None:
    """Stop a process started in its own session: ``sig`` (to it, or to its whole group), up to
    ``timeout_s`` to exit, then SIGKILL to the group. Returns once it has been reaped."""
    if proc.poll() is None:
        if group:
            kill_group(proc.pid, sig)
        else:
            proc.send_signal(sig)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
    proc.wait(10)
