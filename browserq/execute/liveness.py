"""Is a lease holder still alive? Worker names that can be checked in ``/proc`` on the same host.

A run's lease names its holder ``host:pid:start`` (the process start time from
``/proc/PID/stat``), so a redelivered run whose worker was killed on this host is taken over at
once instead of waiting for the lease to expire. Holders on other hosts are never judged.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def process_start_time(pid: int) -> str | None:
    """Field 22 of ``/proc/PID/stat`` (clock ticks since boot), or None if there is no such
    process. With the pid it names one process for good: a recycled pid has another start."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def worker_name() -> str:
    """``host:pid:start``: unique per process, and checkable for liveness on the same host."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{process_start_time(pid) or '0'}"


def holder_dead(owner: str) -> bool:
    """True when a lease holder is a process on this host that no longer exists.

    Lets a redelivered run be taken over at once after its worker was killed, instead of waiting
    for the lease to expire; holders on other hosts are never judged (their lease must expire).
    """
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    current = process_start_time(int(pid_text))
    return current is None or (start not in ("", "0") and current != start)


__all__ = ["holder_dead", "process_start_time", "worker_name"]
