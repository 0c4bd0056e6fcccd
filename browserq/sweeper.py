"""Moved to :mod:`browserq.execute.sweeper` (shim for branches that still import it; removed after the merge)."""

from browserq.execute.sweeper import FileLock, FleetSweeper, PgAdvisoryLock, ProcessLock, SweepLock, sweep_lock_for

__all__ = ["FileLock", "FleetSweeper", "PgAdvisoryLock", "ProcessLock", "SweepLock", "sweep_lock_for"]
