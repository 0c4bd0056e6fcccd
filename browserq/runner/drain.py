"""This worker is stopping: runs that wait for a person hand themselves over to another worker.

A worker told to stop (SIGTERM: Celery's warm shutdown) lets its running runs finish, but a run
waiting for a person could hold it for up to ``BROWSERQ_MAX_HUMAN_WAIT_S`` — longer than any
orchestrator's grace period. So the worker's parent raises one flag (:func:`request`) that every
process of the worker sees; the heartbeat of each run that is waiting then ends the wait as a
*handover* (the run is re-enqueued from its last checkpoint, fenced by its lease, not counted as
a lost worker; another worker resumes it and waits again, with a fresh live-view link).

The flag lives in anonymous shared memory made before the pool forks (:func:`prepare`, from
``worker_init``), so prefork children inherit it; with ``--pool threads`` (one process) and in
runs outside a worker (``browserq run``) it is simply this process's. Never set: never a handover.
"""

from __future__ import annotations

import ctypes
import multiprocessing.sharedctypes
import threading
from typing import Any

_shared: Any = None  # a RawValue(c_bool) shared with forked children, once prepared
_local = threading.Event()  # the flag of a process that never prepared the shared one


def prepare() -> None:
    """In the worker's parent, before the fork: the flag its children will see."""
    global _shared
    if _shared is None:
        _shared = multiprocessing.sharedctypes.RawValue(ctypes.c_bool, False)


def request() -> None:
    """The worker is stopping: waiting runs, hand yourselves over."""
    if _shared is not None:
        _shared.value = True
    _local.set()


def requested() -> bool:
    """Whether this worker was told to stop (cheap: read by every run's heartbeat)."""
    return bool(_shared.value) if _shared is not None else _local.is_set()


def reset() -> None:
    """Back to not stopping (tests; a worker that starts again in one process)."""
    if _shared is not None:
        _shared.value = False
    _local.clear()


__all__ = ["prepare", "request", "requested", "reset"]
