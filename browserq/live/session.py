"""What the runner hands the live view for one wait, and what comes back: each human input."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from browserq.live.typed import TypedText


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


__all__ = ["HumanInput", "LiveSession"]
