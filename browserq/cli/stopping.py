"""Stopping an embedded run (``browserq run``) from outside: Ctrl-C, SIGTERM, ``browserq cancel``.

There is no worker to hand an embedded run to, so a signal must end it here, recorded:

* the first SIGINT (Ctrl-C) or SIGTERM asks the run to stop the way ``browserq cancel`` does
  (``cancel_requested_at``, seen by the run's heartbeat within about 2 s): its step is recorded
  as cut short, its context closed, the run ``cancelled`` with a reason naming the signal; the
  command then exits ``128 + signal`` (130, 143);
* a second signal stops the process at once (the run is then recorded interrupted, ``failed``);
* ``browserq cancel`` of a run whose process is gone (SIGKILL, a crash) or whose lease expired
  cancels it at once: nobody would ever see the request.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import structlog

from browserq.execute.liveness import holder_dead
from browserq.store import RunView, Store

log = structlog.get_logger(__name__)

#: How often, and how far apart, a signal's stop request is tried when the store refuses it.
REQUEST_ATTEMPTS = 30
REQUEST_PAUSE_S = 2.0

#: Why a signal stopped an embedded run (recorded with the run).
REASONS = {
    signal.SIGINT: "cancelled with Ctrl-C (SIGINT) while it ran in `browserq run`",
    signal.SIGTERM: "interrupted: `browserq run` was told to stop (SIGTERM)",
}


class SignalStop:
    """The first SIGINT/SIGTERM of an embedded run: ask the run to stop (recorded); the next one
    stops the process at once. Handlers are this object's only while it is entered."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.signum: int | None = None
        self.run_id: str | None = None
        self._lock = threading.Lock()

    @property
    def exit_code(self) -> int | None:
        """``128 + signal`` once a signal asked the run to stop."""
        return None if self.signum is None else 128 + self.signum

    def watch(self, run_id: str) -> None:
        """The run is recorded: a signal from now on stops it (one that came before, now)."""
        with self._lock:
            self.run_id = run_id
            pending = self.signum
        if pending is not None:
            self._request(run_id, pending)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        with self._lock:
            first, self.signum = self.signum is None, self.signum or signum
            run_id = self.run_id
        if not first:
            raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)
        if run_id is None:  # nothing recorded yet (Chromium starting): nothing to stop but us
            raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)
        # The store write happens off the handler: the main thread may be inside a transaction.
        threading.Thread(
            target=self._request, args=(run_id, signum), name="browserq-stop", daemon=True
        ).start()

    def _request(self, run_id: str, signum: int) -> None:
        # The run's own writes may hold the store (SQLite: one writer) past one transaction's retry
        # window on a loaded machine: ask again rather than let the run go on (a second signal
        # still stops the process at once).
        for attempt in range(REQUEST_ATTEMPTS):
            try:
                self.store.cancellation.request_cancel(run_id, reason=REASONS[signal.Signals(signum)])
            except Exception as exc:
                if attempt == 0:
                    log.error("could not ask the run to stop yet; trying again", run_id=run_id,
                              error=(str(exc).splitlines() or [""])[0][:300])
                time.sleep(REQUEST_PAUSE_S)
                continue
            log.warning(
                "stopping the run",
                run_id=run_id,
                signal=signal.Signals(signum).name,
                hint="press Ctrl-C again to stop at once",
            )
            return
        log.error("could not ask the run to stop; press Ctrl-C again to stop at once", run_id=run_id)

    @contextmanager
    def installed(self) -> Iterator[SignalStop]:
        """Handle SIGINT and SIGTERM meanwhile (a signal ignored at start, as in ``nohup``, stays so)."""
        previous: dict[signal.Signals, Any] = {}
        for sig in REASONS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, self._handle)
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def cancel_if_orphaned(store: Store, view: RunView, reason: str) -> RunView | None:
    """A running (or waiting) run nobody holds any more — its process is gone from this host,
    or its lease expired — is cancelled at once (the request would never be seen); else None."""
    owner = view.lease_owner
    expired = view.lease_expires_at is not None and view.lease_expires_at <= store.leases.database_now()
    gone = owner is not None and holder_dead(owner)
    if not (gone or expired):
        return None
    why = f"its process {owner} is gone" if gone else "its lease expired: no worker holds it"
    return store.transitions.transition(
        view.id,
        "cancelled",
        reason=f"cancelled: {reason} ({why})",
        fields={
            "error_code": "CANCELLED",
            "error_message": f"{reason} ({why})",
            "cancel_reason": reason,
        },
    )


__all__ = ["REASONS", "SignalStop", "cancel_if_orphaned"]
