"""What the runner hands the live view for one wait, what comes back (each human input), and how
the view finds a run again for a page whose worker died (:class:`Follow`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from browserq.live.typed import TypedText

if TYPE_CHECKING:
    from browserq.store.handoffs import Handoffs


@dataclass(frozen=True)
class HumanInput:
    """One input a person forwarded, as recorded: never the characters typed (``text`` stays
    None, ``length`` says how many), nor a key's name in a password field."""

    kind: str  # click | wheel | key | text
    x: float | None = None
    y: float | None = None
    button: str | None = None
    delta_x: float | None = None
    delta_y: float | None = None
    key: str | None = None
    text: str | None = None
    length: int | None = None
    password: bool = False


@dataclass(eq=False)
class LiveSession:
    """One wait's live view (or a running run's, view only): only this page is reachable through it."""

    run_id: str
    handoff_id: int
    message: str
    until: str | None
    deadline: datetime
    page: Callable[[], Any]  # the run's current page (it may change: a tab)
    redeem: Callable[[str], Awaitable[bool]]  # True once for a valid one-time token
    on_input: Callable[[HumanInput], Awaitable[None]]
    on_continue: Callable[[], None]
    on_give_up: Callable[[], None]
    #: The run is running (``BROWSERQ_LIVE_VIEW_WHILE_RUNNING``): it is shown, nothing is forwarded.
    view_only: bool = False
    #: What the person typed, for the runner to scrub from the evidence (never recorded).
    typing: TypedText = field(default_factory=TypedText)


@dataclass(frozen=True)
class Follow:
    """How a live view finds a run again for a page whose worker died (the database knows):
    ``mint(run_id, handoff_id)`` → the page's follow secret; ``answer(secret, handoff_id)`` →
    ``{"state": moved|waiting|ended|refused, "url": …, "status": …}``."""

    mint: Callable[[str, int], Awaitable[str]]
    answer: Callable[[str, int], Awaitable[dict[str, Any]]]


def store_follow(handoffs: Handoffs, ttl_s: float) -> Follow:
    """The :class:`Follow` of the store's handoffs (their ``mint_follow_token`` and
    ``follow_handoff``), called off the event loop."""
    import asyncio

    async def mint(run_id: str, handoff_id: int) -> str:
        return await asyncio.to_thread(handoffs.mint_follow_token, run_id, handoff_id=handoff_id, ttl_s=ttl_s)

    async def answer(secret: str, handoff_id: int) -> dict[str, Any]:
        found = await asyncio.to_thread(handoffs.follow_handoff, secret, handoff_id=handoff_id, ttl_s=ttl_s)
        return {"state": found.state, "url": found.url, "status": found.status}

    return Follow(mint=mint, answer=answer)


__all__ = ["Follow", "HumanInput", "LiveSession", "store_follow"]
