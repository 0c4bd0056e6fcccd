"""A run attempt's records of waits for people and of its live view: the rows behind a
``handoff`` (begun, ended, handed over), the one-time links to its page, and the view-only watch.

Part of the run's journal (:attr:`browserq.journal.RunJournal.handoffs`): the runner says what
happened, these calls write it at once (each is a status change other processes read: the run
goes to ``waiting_for_human``, a link is redeemed). Every call carries the run's lease token.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from browserq.store.handoffs import Handoffs
from browserq.store.views import HandoffView

T = TypeVar("T")


class HandoffRecords:
    """The handoff and live-view rows of one run attempt (fenced by its lease token)."""

    def __init__(self, handoffs: Handoffs, *, run_id: str, run_attempt: int, token: int | None) -> None:
        self.handoffs = handoffs
        self.run_id = run_id
        self.run_attempt = run_attempt
        self.token = token

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Store calls are synchronous; keep them off the event loop."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def begin(
        self, *, step_path: str, kind: str, message: str, until: str | None, timeout_s: float,
        live_base_url: str | None,
    ) -> HandoffView:
        """The run waits for a person now (``waiting_for_human``); the wait's row."""
        return await self._call(
            self.handoffs.begin_handoff, self.run_id, token=self.token, run_attempt=self.run_attempt,
            step_path=step_path, kind=kind, message=message, until=until, timeout_s=timeout_s,
            live_base_url=live_base_url,
        )

    async def end(self, handoff_id: int, *, outcome: str, inputs: int, resume: bool, reason: str) -> None:
        """The wait ended with ``outcome``; ``resume``: the run goes on running."""
        await self._call(
            self.handoffs.end_handoff, self.run_id, token=self.token, handoff_id=handoff_id,
            outcome=outcome, inputs=inputs, resume=resume, reason=reason,
        )

    async def mint_link(self, *, purpose: str, ttl_s: float | None) -> str | None:
        """A one-time link to the run's live view (None when the run waits for nobody)."""
        return await self._call(self.handoffs.mint_live_token, self.run_id, purpose=purpose, ttl_s=ttl_s)

    async def redeem_link(self, token: str, *, handoff_id: int) -> bool:
        """Whether ``token`` opens the live view of the wait ``handoff_id`` (it is used up then)."""
        return await self._call(self.handoffs.redeem_live_token, token, handoff_id=handoff_id)

    async def begin_watch(self, *, live_base_url: str, for_s: float) -> HandoffView:
        """The view-only live view of the running run (BROWSERQ_LIVE_VIEW_WHILE_RUNNING)."""
        return await self._call(
            self.handoffs.begin_watch, self.run_id, token=self.token, run_attempt=self.run_attempt,
            live_base_url=live_base_url, for_s=for_s,
        )

    async def end_watch(self, handoff_id: int) -> None:
        """The run's execution here ended: its view-only live view closes."""
        await self._call(self.handoffs.end_watch, handoff_id)


__all__ = ["HandoffRecords"]
