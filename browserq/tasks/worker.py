"""This worker process's runtime and sweeper: started after the fork, stopped at shutdown.

Each prefork child owns one :class:`~browserq.execute.Runtime` (one Chromium) and one
:class:`~browserq.execute.FleetSweeper` thread; a child that cannot get a working browser
leaves (:func:`exit_without_browser`) so the pool starts a fresh one.

With ``--pool threads`` there is no fork and Celery sends no process signals: the worker process
itself owns the one runtime, started when the worker is ready (:func:`start_in_worker`) and
stopped at its shutdown (:func:`stop_in_worker`); its K task threads share that runtime's browser,
each run in a context of its own. Tasks that arrive before the worker is ready start it lazily,
under a lock, so K threads never launch K browsers.

A process whose runtime started is *warm* (:func:`~browserq.metrics.lifecycle.process_warm`):
the worker's ready file and ``/ready`` say it can take runs (:mod:`browserq.metrics.readiness`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn

import structlog

from browserq.errors import ConfigError
from browserq.execute import FleetSweeper, Runtime
from browserq.logs import configure_logging
from browserq.metrics.lifecycle import process_cold, process_warm
from browserq.settings import Settings, get_settings
from browserq.store import Store
from browserq.tasks.observers import worker_meters, worker_observers, worker_relay

log = structlog.get_logger(__name__)

#: Exit status of a worker process that has no usable browser (EX_SOFTWARE).
EXIT_NO_BROWSER = 70
#: How long such a process waits before it exits.
NO_BROWSER_PAUSE_S = 2.0

_runtime: Runtime | None = None
_sweeper: FleetSweeper | None = None
#: Held while the runtime starts or stops: the task threads of ``--pool threads`` share it.
_runtime_lock = threading.RLock()
#: What else this process holds on its runtime and lets go first when it stops (session hosts).
_on_stop: list[Callable[[], None]] = []


def on_process_stop(release: Callable[[], None]) -> None:
    """Call ``release`` when this process stops, before its runtime stops."""
    _on_stop.append(release)


def worker_runtime() -> Runtime:
    """This process's runtime; started lazily (solo, or a threads-pool task before "ready")."""
    global _runtime
    runtime = _runtime
    if runtime is not None:
        return runtime
    with _runtime_lock:
        if _runtime is None:
            settings = get_settings()
            _runtime = Runtime(settings, observers=worker_observers(settings), meters=worker_meters(settings),
                               webhook_relay=worker_relay(settings)).start()
            process_warm()
        return _runtime


def start_process(sweep: Callable[[Store, Settings], int]) -> None:
    """After the fork: launch this child's browser, then join the fleet's sweeper election."""
    global _runtime, _sweeper
    settings = get_settings()
    configure_logging(settings)
    with _runtime_lock:
        if _runtime is None:
            try:
                _runtime = Runtime(settings.model_copy(update={"auto_migrate": False}),
                                   observers=worker_observers(settings), meters=worker_meters(settings),
                                   webhook_relay=worker_relay(settings)).start()  # events leave when recorded
                process_warm()  # this process can take runs: readiness (browserq.metrics)
            except ConfigError as exc:  # the first task tries again, and makes way if it still fails
                log.error("browser did not start in this worker process", error=str(exc)[:300])
                _runtime = None
        _start_sweeper(settings, sweep)


def _start_sweeper(settings: Settings, sweep: Callable[[Store, Settings], int]) -> None:
    global _sweeper
    if _runtime is not None and settings.sweep_in_workers and _sweeper is None:
        # Nothing-lost must not depend on beat: every worker process competes for the fleet's
        # sweep lock, and its holder sweeps (see browserq.execute.sweeper).
        _sweeper = FleetSweeper(settings, sweep, owner=_runtime.owner).start()


def stop_process() -> None:
    """At the child's shutdown: stop the sweeper, close the browser (no Chromium left behind)."""
    global _runtime, _sweeper
    while _on_stop:
        try:
            _on_stop.pop()()
        except Exception as exc:
            log.warning("could not let go of what this process holds", error=str(exc)[:300])
    with _runtime_lock:
        if _sweeper is not None:
            _sweeper.stop()
            _sweeper = None
        if _runtime is not None:
            process_cold()
            _runtime.stop()
            _runtime = None


def runs_in_this_process(pool: Any) -> bool:
    """Whether Celery's ``pool`` executes tasks in the worker process itself (threads), so that
    no ``worker_process_init`` will come. Prefork forks children (never a browser in the parent);
    solo sends the process signals itself."""
    from celery.concurrency.thread import TaskPool as ThreadsPool

    return isinstance(pool, ThreadsPool)


def start_in_worker(pool: Any, sweep: Callable[[Store, Settings], int]) -> None:
    """``worker_ready`` with ``--pool threads``: this process's runtime and sweeper, before runs."""
    if runs_in_this_process(pool):
        start_process(sweep)


def stop_in_worker() -> None:
    """``worker_shutdown``: with ``--pool threads`` the worker process owns the runtime; close it.
    (A prefork parent has none: a no-op there.)"""
    stop_process()


def exit_without_browser(exc: BaseException) -> NoReturn:
    """No working browser in this process: leave, so the prefork pool starts a fresh child.

    The message is requeued (a lost worker, ``task_reject_on_worker_lost``) and the run, handed
    back or never started, is executed by another process: no run is failed for it. With
    ``--pool threads`` the SystemExit only ends this task (Celery reports it as a lost worker, so
    the message is requeued too) and the process stays: the next task starts a fresh runtime.
    """
    global _runtime
    log.error("exiting: this worker process has no usable browser", error=str(exc)[:300])
    with _runtime_lock:
        if _runtime is not None:
            process_cold()
            try:
                _runtime.stop()
            except Exception as stop_error:
                log.warning("runtime stop failed", error=str(stop_error)[:200])
            _runtime = None
    time.sleep(NO_BROWSER_PAUSE_S)  # a host that cannot start Chromium must not spin
    raise SystemExit(EXIT_NO_BROWSER) from exc


__all__ = ["EXIT_NO_BROWSER", "NO_BROWSER_PAUSE_S", "exit_without_browser", "on_process_stop", "runs_in_this_process",
           "start_in_worker", "start_process", "stop_in_worker", "stop_process", "worker_runtime"]
