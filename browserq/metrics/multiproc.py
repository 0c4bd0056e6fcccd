"""prometheus_client's multiprocess mode for a worker: one directory of mmapped files per worker.

A prefork worker's children each record into files of their own (``counter_<pid>.db``, ...) in
the directory named by ``PROMETHEUS_MULTIPROC_DIR``; the parent merges them at scrape time. The
directory must be set in the parent before it forks and wiped when a worker starts (stale files
would add a previous worker's counts).

prometheus_client picks its value class when ``prometheus_client.values`` is first imported,
which in a worker is at app load, before ``worker_init`` can set the variable:
:func:`use_directory` sets it and picks the value class again. That is safe because every
browserq metric is labelled (no value exists before the first ``labels()``, which a worker's
parent never calls).

Gauges are ``livesum``: the sum over live processes. A child that exits cleanly marks itself
dead (:func:`process_exited`); a killed one is found dead at the next scrape (:func:`reap_dead`).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

ENV = "PROMETHEUS_MULTIPROC_DIR"
_LIVE_FILE = re.compile(r"^gauge_live\w+?_(\d+)\.db$")


def prepare_directory(configured: Path | None) -> tuple[Path, bool]:
    """The worker's metrics directory, empty: ``configured`` (made if missing, its ``*.db`` files
    deleted) or a fresh temporary one. Returns it and whether it is ours to delete at the end."""
    if configured is None:
        return Path(tempfile.mkdtemp(prefix="browserq-metrics-")), True
    configured.mkdir(parents=True, exist_ok=True)
    for stale in configured.glob("*.db"):
        stale.unlink(missing_ok=True)
    return configured, False


def use_directory(path: Path) -> None:
    """Record this process's metrics, and those of the children it forks, into ``path``."""
    from prometheus_client import values

    os.environ[ENV] = str(path)
    values.ValueClass = values.get_value_class()


def directory() -> Path | None:
    """The multiprocess directory this process records into (inherited from the worker parent)."""
    value = os.environ.get(ENV)
    return Path(value) if value else None


def process_exited(pid: int) -> None:
    """``pid`` (a worker child) has stopped: its live gauges no longer count."""
    from prometheus_client import multiprocess

    path = directory()
    if path is not None and path.is_dir():
        multiprocess.mark_process_dead(pid, str(path))


def reap_dead(path: Path) -> list[int]:
    """Mark dead the processes whose live-gauge files remain though they are gone (SIGKILL,
    OOM: no shutdown signal ran). Returns their pids."""
    from prometheus_client import multiprocess

    dead = sorted({int(match.group(1)) for f in os.listdir(path)
                   if (match := _LIVE_FILE.match(f)) and not pid_alive(int(match.group(1)))})
    for pid in dead:
        multiprocess.mark_process_dead(pid, str(path))
    return dead


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie has)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (not Linux): existing is alive
    return state != "Z"


def remove_directory(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


__all__ = ["ENV", "directory", "pid_alive", "prepare_directory", "process_exited", "reap_dead",
           "remove_directory", "use_directory"]
