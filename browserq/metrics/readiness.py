"""Is this worker ready to take runs? Per-process warm markers and the worker's ready file.

A worker process is *warm* once its runtime started: its Chromium launched and warmed with one
page, its spare contexts made. It says so with a marker file ``<base>.<pid>``, removed when its
runtime stops (``base`` is ``BROWSERQ_READY_FILE``, or ``ready`` in the metrics directory when
only metrics are on).

The worker's parent (with ``--pool threads``, the one process) runs a :class:`ReadyWatch`: every
second it drops the markers of processes that are gone (a SIGKILLed child cannot remove its
own) and keeps ``BROWSERQ_READY_FILE`` present while at least one process is warm — the worker
can take a run — and absent otherwise, and from the moment the worker is told to stop
(:meth:`ReadyWatch.drain`, SIGTERM); ``/ready`` answers from the same markers. The file holds
the number of warm processes. Both are removed when the worker starts (a stale file of a killed
worker must not say "ready") and when it shuts down.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

import structlog

from browserq.metrics import multiproc
from browserq.settings import Settings

log = structlog.get_logger(__name__)

#: How often the parent looks at the markers (the ready file lags a change by at most this).
WATCH_INTERVAL_S = 1.0


def marker_base(settings: Settings) -> Path | None:
    """Where this worker's processes put their markers (None: readiness is not asked for)."""
    if settings.ready_file is not None:
        return settings.ready_file
    directory = multiproc.directory() if settings.metrics_port is not None else None
    if directory is not None:
        return directory / "ready"
    return None


def _marker(base: Path, pid: int) -> Path:
    return base.with_name(f"{base.name}.{pid}")


def mark_warm(settings: Settings) -> None:
    """This process's runtime started: it can take runs."""
    base = marker_base(settings)
    if base is not None:
        try:
            base.parent.mkdir(parents=True, exist_ok=True)
            _marker(base, os.getpid()).touch()
        except OSError as exc:
            log.warning("cannot write the ready marker", path=str(base), error=str(exc)[:200])


def mark_cold(settings: Settings) -> None:
    """This process's runtime stopped (or never started)."""
    base = marker_base(settings)
    if base is not None:
        _marker(base, os.getpid()).unlink(missing_ok=True)


def warm_pids(base: Path) -> list[int]:
    """The live processes with a marker; markers of processes that are gone are removed."""
    warm = []
    for path in base.parent.glob(f"{base.name}.*"):
        suffix = path.name[len(base.name) + 1:]
        if not suffix.isdigit():
            continue
        if multiproc.pid_alive(int(suffix)):
            warm.append(int(suffix))
        else:
            path.unlink(missing_ok=True)
    return sorted(warm)


@dataclass(frozen=True)
class Readiness:
    warm: int
    processes: int | None  # how many the worker runs (None: unknown)

    @property
    def ready(self) -> bool:
        return self.warm > 0

    def describe(self) -> str:
        of = f" of {self.processes}" if self.processes else ""
        state = "ready" if self.ready else "not ready"
        return f"{state}: {self.warm}{of} worker processes have a warm browser"


class ReadyWatch:
    """The worker parent's view of its processes' markers, kept in the ready file."""

    def __init__(self, base: Path, ready_file: Path | None, processes: int | None = None) -> None:
        self.base, self.ready_file, self.processes = base, ready_file, processes
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._written: int | None = None
        self._draining = False
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Remove the ready file and every marker (a worker starting, or stopping)."""
        if self.ready_file is not None:
            self.ready_file.unlink(missing_ok=True)
        for path in self.base.parent.glob(f"{self.base.name}.*"):
            if path.name[len(self.base.name) + 1:].isdigit():
                path.unlink(missing_ok=True)
        self._written = None

    def check(self) -> Readiness:
        """Look at the markers now, and bring the ready file in line."""
        with self._lock:
            state = Readiness(0 if self._draining else len(warm_pids(self.base)), self.processes)
            if self.ready_file is not None and state.warm != self._written:
                self._write(state)
            return state

    def drain(self) -> None:
        """The worker is stopping: not ready from now on (the ready file goes now, not at the next
        look), however many processes are still warm finishing their runs."""
        self._draining = True
        self.check()

    def _write(self, state: Readiness) -> None:
        assert self.ready_file is not None
        try:
            if state.ready:
                self.ready_file.parent.mkdir(parents=True, exist_ok=True)
                self.ready_file.write_text(f"{state.warm}\n")
            else:
                self.ready_file.unlink(missing_ok=True)
            self._written = state.warm
        except OSError as exc:
            log.warning("cannot update the ready file", path=str(self.ready_file), error=str(exc)[:200])

    def start(self) -> ReadyWatch:
        self._thread = threading.Thread(target=self._watch, name="browserq-ready", daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                self.check()
            except Exception as exc:  # a watch that dies would leave a stale answer
                log.warning("readiness check failed", error=str(exc)[:200])
            self._stop.wait(WATCH_INTERVAL_S)

    def stop(self) -> None:
        """Stop watching; the worker is going: no ready file, no markers."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(WATCH_INTERVAL_S * 5)
        with self._lock:
            self.clear()


__all__ = [
    "WATCH_INTERVAL_S",
    "Readiness",
    "ReadyWatch",
    "mark_cold",
    "mark_warm",
    "marker_base",
    "warm_pids",
]
