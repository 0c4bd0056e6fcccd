"""This worker process's runtime and sweeper: started after the fork, stopped at shutdown.

Each prefork child owns one :class:`~browserq.execute.Runtime` (one Chromium) and one
:class:`~browserq.execute.FleetSweeper` thread; a child that cannot get a working browser
leaves (:func:`exit_without_browser`) so the pool starts a fresh one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NoReturn

import structlog

from browserq.errors import ConfigError
from browserq.execute import FleetSweeper, Runtime
from browserq.logs import configure_logging
from browserq.settings import Settings, get_settings
from browserq.store import Store

log = structlog.get_logger(__name__)

#: Exit status of a worker process that has no usable browser (EX_SOFTWARE).
EXIT_NO_BROWSER = 70
#: How long such a process waits before it exits.
NO_BROWSER_PAUSE_S = 2.0

_runtime: Runtime | None = None
_sweeper: FleetSweeper | None = None


def worker_runtime() -> Runtime:
    """This process's runtime; started lazily for pools that send no process signals (solo)."""
    global _runtime
    if _runtime is None:
        _runtime = Runtime(get_settings()).start()
    return _runtime


def start_process(sweep: Callable[[Store, Settings], int]) -> None:
    """After the fork: launch this child's browser, then join the fleet's sweeper election."""
    global _runtime, _sweeper
    settings = get_settings()
    configure_logging(settings)
    try:
        _runtime = Runtime(settings.model_copy(update={"auto_migrate": False})).start()
    except ConfigError as exc:  # the first task tries again, and makes way if it still fails
        log.error("browser did not start in this worker process", error=str(exc)[:300])
        _runtime = None
    if _runtime is not None and settings.sweep_in_workers and _sweeper is None:
        # Nothing-lost must not depend on beat: every worker process competes for the fleet's
        # sweep lock, and its holder sweeps (see browserq.execute.sweeper).
        _sweeper = FleetSweeper(settings, sweep, owner=_runtime.owner).start()


def stop_process() -> None:
    """At the child's shutdown: stop the sweeper, close the browser (no Chromium left behind)."""
    global _runtime, _sweeper
    if _sweeper is not None:
        _sweeper.stop()
        _sweeper = None
    if _runtime is not None:
        _runtime.stop()
        _runtime = None


def exit_without_browser(exc: BaseException) -> NoReturn:
    """No working browser in this process: leave, so the prefork pool starts a fresh child.

    The message is requeued (a lost worker, ``task_reject_on_worker_lost``) and the run, handed
    back or never started, is executed by another process: no run is failed for it.
    """
    global _runtime
    log.error("exiting: this worker process has no usable browser", error=str(exc)[:300])
    if _runtime is not None:
        try:
            _runtime.stop()
        except Exception as stop_error:
            log.warning("runtime stop failed", error=str(stop_error)[:200])
        _runtime = None
    time.sleep(NO_BROWSER_PAUSE_S)  # a host that cannot start Chromium must not spin
    raise SystemExit(EXIT_NO_BROWSER) from exc


__all__ = ["EXIT_NO_BROWSER", "NO_BROWSER_PAUSE_S", "exit_without_browser", "start_process", "stop_process",
           "worker_runtime"]
