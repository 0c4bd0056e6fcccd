"""The heartbeat of a leased run: renews the lease while the run progresses, and stops the run
when the lease was lost, the run was cancelled, the database stayed away, or the worker is
stopping while the run waits for a person (a handover, :mod:`browserq.runner.drain`).

It stops the run by cancelling the run's task with ``state.interrupt`` saying why; the runner
tells that apart from a cancel from outside (a time limit).
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from browserq.errors import StoreError
from browserq.journal import LeaseLost, StoreUnavailable
from browserq.runner import drain
from browserq.runner.state import RunState

log = structlog.get_logger(__name__)

#: The longest a running run takes to notice it was cancelled (the heartbeat reads the flag).
CANCEL_POLL_S = 2.0


def renew_interval(lease_ttl_s: float) -> float:
    """How often a lease is renewed: every third of it, and at least every CANCEL_POLL_S so a
    cancel lands quickly (a run's heartbeat, and the sessions' renewer of a worker process)."""
    return max(0.5, min(lease_ttl_s / 3, CANCEL_POLL_S))


async def heartbeat(state: RunState, main: asyncio.Task[Any]) -> None:
    """Renew the lease while the run progresses; stop the run if it was lost or cancelled."""
    request = state.request
    interval = renew_interval(request.lease_ttl_s)
    while True:
        await asyncio.sleep(interval)
        try:
            cancel_reason = await state.journal.renew_lease(request.lease_ttl_s)
        except LeaseLost:
            state.interrupt.kind = "lease_lost"
            main.cancel()
            return
        except StoreUnavailable as exc:  # away for the whole retry window: the attempt stops
            state.interrupt.kind, state.interrupt.reason = "store_unavailable", str(exc)
            main.cancel()
            return
        except StoreError as exc:  # the database refused the renewal: try again next time
            log.warning("lease renewal failed", run_id=request.run_id, error=str(exc))
            continue
        if cancel_reason is not None:
            state.interrupt.kind, state.interrupt.reason = "cancel", cancel_reason
            main.cancel()
            return
        if state.human.waiting and drain.requested():  # this worker is stopping: go elsewhere
            state.interrupt.kind = "handover"
            main.cancel()
            return
