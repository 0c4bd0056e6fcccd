"""Moved to :mod:`browserq.execute` (shim for branches that still import it; removed after the merge)."""

from browserq.execute.decide import RetryLater, backoff_s
from browserq.execute.errors import RunBusy, WorkerUnusable
from browserq.execute.liveness import holder_dead, worker_name
from browserq.execute.runtime import Runtime

__all__ = ["RetryLater", "RunBusy", "Runtime", "WorkerUnusable", "backoff_s", "holder_dead", "worker_name"]
