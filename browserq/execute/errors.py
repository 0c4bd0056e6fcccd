"""The execution layer's own errors, each carrying its policy (drawn in :mod:`browserq.errors`).

    BrowserqError
    ├── RunBusy          WAIT            another live worker holds the run's lease: look again later
    ├── ResolveRefused   PERMANENT       a resolution that would re-run an unknown step blindly, or
    │                                    start where no retry can
    └── WorkerUnusable   INFRASTRUCTURE  this process has no browser and cannot get one: it exits
"""

from __future__ import annotations

from browserq.errors import BrowserqError, ErrorClass


class RunBusy(BrowserqError):
    """Another live worker holds this run's lease (a duplicate delivery): try again later."""

    policy = ErrorClass.WAIT

    def __init__(self, run_id: str, holder: str, retry_in_s: float) -> None:
        self.run_id, self.holder, self.retry_in_s = run_id, holder, retry_in_s
        super().__init__(f"run {run_id} is being executed by {holder}; retry in {retry_in_s:.0f} s")


class ResolveRefused(BrowserqError):
    """A ``needs_review`` resolution that cannot be carried out as asked; the message says why
    and what would work (say the unknown step was checked, or start at another step)."""


class WorkerUnusable(BrowserqError):
    """This process has no working browser and cannot get one: it must exit so its supervisor
    (Celery's prefork pool) starts a fresh process. The run was handed back (``retrying``, lease
    released), so another process resumes it."""

    policy = ErrorClass.INFRASTRUCTURE


__all__ = ["ResolveRefused", "RunBusy", "WorkerUnusable"]
