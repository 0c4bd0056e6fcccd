"""The one lease renewer of a worker process (browserq.sessions.renewer): every held session's
lease renewed in one store call per tick, a session whose lease was taken over or cancelled
stopped through its keeper with the reason — on the real store (PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, cast

from browserq.runner.state import Interrupt
from browserq.sessions.renewer import SessionRenewer
from browserq.store import RunStatus, Store
from browserq.store.models import utcnow
from tests.store.helpers import age, expire_lease, run_in


class _Held:
    """What the renewer reads of a session's state: its interrupt."""

    def __init__(self) -> None:
        self.interrupt = Interrupt()


def test_one_renewer_renews_every_session_at_once_and_stops_the_lost_and_the_cancelled(pg_url: str) -> None:
    store = Store(pg_url)
    store.schema.upgrade()  # (a no-op when a worker of the session tests migrated it already)
    try:
        kept, taken, cancelled = (run_in(store, RunStatus.RUNNING) for _ in range(3))
        for run_id, _lease in (kept, taken, cancelled):
            age(store, run_id, lease_expires_at=-5)  # 5 s left

        async def scenario() -> dict[str, Any]:
            renewer = SessionRenewer(store.leases, lease_ttl_s=60)
            keepers, states = {}, {}
            for run_id, lease in (kept, taken, cancelled):
                assert lease is not None
                states[run_id] = _Held()
                keepers[run_id] = asyncio.create_task(asyncio.sleep(3600))
                renewer.hold(run_id, lease.token, cast(Any, states[run_id]), keepers[run_id])
            await renewer.tick()
            renewed = {run_id: store.runs.get_run(run_id) for run_id in keepers}
            expire_lease(store, taken[0])
            store.leases.acquire_lease(taken[0], owner="another-worker", ttl_s=60)
            store.cancellation.request_cancel(cancelled[0], reason="enough")
            await renewer.tick()
            await asyncio.sleep(0)
            stopped = {run_id: (task.cancelled() or task.cancelling() > 0, states[run_id].interrupt.kind,
                                states[run_id].interrupt.reason) for run_id, task in keepers.items()}
            running = renewer._task is not None and not renewer._task.done()
            renewer.let_go(kept[0], keepers[kept[0]])
            keepers[kept[0]].cancel()
            await asyncio.sleep(renewer.interval_s + 0.5)  # its next tick sees nothing held: it ends
            return {"renewed": renewed, "stopped": stopped, "ticks": renewer.ticks, "running": running,
                    "ended": renewer._task is None}

        seen = asyncio.run(scenario())
        assert seen["ticks"] == 2  # one store call a tick, for all three sessions
        for run in seen["renewed"].values():
            assert run is not None and run.lease_expires_at is not None
            assert run.lease_expires_at > utcnow() + timedelta(seconds=50)
        assert seen["stopped"] == {kept[0]: (False, None, ""), taken[0]: (True, "lease_lost", ""),
                                   cancelled[0]: (True, "cancel", "enough")}
        assert seen["running"] and seen["ended"]
        other = store.runs.get_run(taken[0])
        assert other is not None and other.lease_owner == "another-worker"  # never renewed again by us
    finally:
        store.dispose()
