"""A held session watched: its page in the live view while it is held, and what its watchers (:mod:`browserq.session_events`) are told of one answered message:
its kind, action, outcome (``ok``, an error code, ``closed``), how long it took, the epoch and the
page's URL (redacted) — never a value the command carried or got."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from browserq.runner.live_view import LiveViews
from browserq.session_events import CommandAnswered
from browserq.sessions.held import HeldSession
from browserq.templates import ACTIONS


def answered_event(held: HeldSession, body: dict[str, Any], reply: dict[str, Any], took_s: float) -> CommandAnswered:
    """What a watcher is told of one answered message (its URL redacted; no value of it)."""
    kind = str(body.get("kind") or "command")
    action = str(body.get("action") or "") if kind == "command" else kind
    if kind == "command" and action not in ACTIONS:
        action = "other"  # a client's typo is no label (a metric's series stay bounded)
    error = reply.get("error") if isinstance(reply.get("error"), dict) else None
    if reply.get("ok"):
        outcome = "ok"
    elif reply.get("closed"):
        outcome = "closed"
    elif error is not None:
        outcome = str(error.get("code") or "INTERNAL")
    else:  # a batch: the first failed step's code
        failed = [r for r in reply.get("results") or [] if isinstance(r, dict) and not r.get("ok")]
        outcome = str(((failed[0].get("error") or {}) if failed else {}).get("code") or "failed")
    page = held.state.browser.page
    url = held.redactor.text(page.url) if page is not None and not page.is_closed() else None
    return CommandAnswered(held.run_id, kind, action, outcome, took_s, held.epoch, held.answered, url, time.time())


#: How often the live view's watch looks whether its session is closing.
WATCH_TICK_S = 0.5


async def show_live(live: LiveViews, held: HeldSession) -> None:
    """While the session is held here, its page in this process's live view, view only, as a
    running run's (``BROWSERQ_LIVE_VIEW_WHILE_RUNNING``; ``browserq live SESSION_ID`` mints the
    link). The view closes when the session closes or is lost (a takeover shows it again there)."""
    async with live.watched(held.state):
        while held.closing is None and held.run_id:
            await asyncio.sleep(WATCH_TICK_S)


__all__ = ["WATCH_TICK_S", "answered_event", "show_live"]
