"""One lease renewer per worker process, for every session the process holds.

An idle session still holds its run's lease. Renewing each one on its own (the runner's
heartbeat, one transaction per session every :func:`~browserq.runner.heartbeat.renew_interval`)
costs ten transactions a second for twenty idle sessions; here one task renews them all in ONE
statement and one transaction per tick (:meth:`browserq.store.leases.Leases.renew_leases`, the
statement template runs' batch writes renew their lease with), and stops a session the way the
heartbeat stops a run — ``state.interrupt`` says why, its keeper task is cancelled:

* its lease was taken over (its token is no longer the run's, or the run is no longer held):
  ``lease_lost`` — the keeper lets it go without writing (fencing);
* a cancel was requested (``browserq cancel``): ``cancel``;
* the database stayed away for the store's whole retry window: ``store_unavailable``, every
  session (none of their leases can be known to be held);
* the database refused the renewal: logged, tried again next tick.

The task runs only while the process holds a session (started by the first :meth:`hold`, it
ends when the last one is let go).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import structlog

from browserq.errors import StoreError
from browserq.runner.heartbeat import renew_interval
from browserq.runner.state import RunState
from browserq.store import StoreUnavailable
from browserq.store.leases import Leases

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class _Held:
    state: RunState  # its interrupt says why it was stopped
    token: int  # its lease's fencing token
    keeper: asyncio.Task[Any]  # cancelled to stop the session


class SessionRenewer:
    """Renews the leases of the sessions :meth:`hold` was given; lives on the runtime loop."""

    def __init__(self, leases: Leases, lease_ttl_s: float) -> None:
        self.leases = leases
        self.ttl_s = lease_ttl_s
        self.interval_s = renew_interval(lease_ttl_s)
        self._held: dict[str, _Held] = {}
        self._task: asyncio.Task[None] | None = None
        self.ticks = 0  # renewal transactions so far (tests, logs)

    def hold(self, run_id: str, token: int, state: RunState, keeper: asyncio.Task[Any]) -> None:
        """Renew this session's lease from now on; stop it through ``keeper`` (on the loop)."""
        self._held[run_id] = _Held(state, token, keeper)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def let_go(self, run_id: str, keeper: asyncio.Task[Any]) -> None:
        """Renew it no more (its keeper ended); a newer holding of the same run stays."""
        held = self._held.get(run_id)
        if held is not None and held.keeper is keeper:
            del self._held[run_id]

    async def _run(self) -> None:
        while self._held:
            await asyncio.sleep(self.interval_s)
            await self.tick()
        self._task = None

    async def tick(self) -> None:
        """Renew every held session's lease at once; stop those that are lost or cancelled."""
        held = dict(self._held)
        if not held:
            return
        tokens = {run_id: one.token for run_id, one in held.items()}
        try:
            seen = await asyncio.to_thread(self.leases.renew_leases, tokens, ttl_s=self.ttl_s)
        except StoreUnavailable as exc:  # away for the whole retry window: no lease is known held
            for run_id, one in held.items():
                self._stop(run_id, one, "store_unavailable", str(exc))
            return
        except StoreError as exc:  # the database refused the renewal: try again next tick
            log.warning("session lease renewal failed", sessions=len(held), error=str(exc)[:300])
            return
        finally:
            self.ticks += 1
        for run_id, one in held.items():
            lease = seen.get(run_id)
            if lease is None or not lease.renewed:
                self._stop(run_id, one, "lease_lost", "")
            elif lease.cancel_reason is not None:
                self._stop(run_id, one, "cancel", lease.cancel_reason)

    def _stop(self, run_id: str, one: _Held, kind: str, reason: str) -> None:
        if self._held.get(run_id) is not one or one.keeper.done():
            return  # let go meanwhile (closed by its client, its idle timeout…)
        del self._held[run_id]
        one.state.interrupt.kind, one.state.interrupt.reason = kind, reason
        one.keeper.cancel()


__all__ = ["SessionRenewer"]
