"""An agent session's timeline for its report: its commands in order — what each did and to
what (ref, selector or URL), how it ended and how long it took — with the moments its page
changed (a navigation: earlier refs went stale; a takeover by another worker: a new epoch), the
pauses the agent took, and how the session ended.

Read from the records only (the session's step attempts, its transitions): pure, tested without
a browser.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from browserq.report.model import SessionEnd, SessionEntry, SessionTimeline
from browserq.report.timeline import duration_text

#: The synthetic template every session's run is recorded under (browserq.sessions.template).
SESSION_TEMPLATE = "session"
#: A pause between two commands at least this long is drawn (the agent was thinking, or gone).
PAUSE_MS = 5_000.0


def is_session(run: Any) -> bool:
    return getattr(run, "template_name", None) == SESSION_TEMPLATE


def target_of(inputs: dict[str, Any] | None) -> str:
    """What a command aimed at: ``ref e4.17``, a selector, a locator mapping, or a URL."""
    inputs = inputs or {}
    selector = inputs.get("selector")
    if isinstance(selector, str) and selector.startswith("ref="):
        return f"ref {selector.removeprefix('ref=')}"
    if isinstance(selector, dict):
        return json.dumps(selector, ensure_ascii=False, sort_keys=True)
    for key in ("selector", "url", "what", "key"):
        value = inputs.get(key)
        if isinstance(value, str) and value:
            return value if key in ("selector", "url") else f"{key} {value}"
    return ""


def session_timeline(run: Any, steps: Sequence[Any], transitions: Sequence[Any]) -> SessionTimeline:
    """The session's commands (every attempt of each, as recorded), in order."""
    entries: list[SessionEntry] = []
    origin = min([s.started_at for s in steps] + ([run.started_at] if run.started_at else []), default=None)
    last_end: datetime | None = None
    run_attempt = None
    for n, step in enumerate(steps, start=1):
        if run_attempt is not None and step.run_attempt != run_attempt:
            entries.append(_marker("takeover", f"taken over by another worker (holder {step.run_attempt}): "
                                   "a new epoch, earlier refs are stale; commands in flight were not run again"))
        run_attempt = step.run_attempt
        if last_end is not None and (pause := (step.started_at - last_end).total_seconds() * 1000) >= PAUSE_MS:
            entries.append(_marker("pause", f"no command for {duration_text(pause)}"))
        entries.append(_entry(n, step, origin))
        if step.finished_at is not None:
            last_end = step.finished_at
        if step.status == "succeeded" and step.url_after and step.url_after != step.url_before:
            entries.append(_marker("navigation", f"the page is now {step.url_after}: refs of earlier "
                                   "snapshots are stale"))
    failed = sum(1 for s in steps if s.status == "failed")
    return SessionTimeline(entries=tuple(entries), commands=len(steps), failed=failed, end=_end(run, transitions))


def _entry(n: int, step: Any, origin: datetime | None) -> SessionEntry:
    inputs = step.inputs or {}
    at = f"+{duration_text((step.started_at - origin).total_seconds() * 1000)}" if origin is not None else ""
    outcome = step.error_code or step.status
    return SessionEntry(kind="command", n=n, at=at, action=step.action, target=target_of(inputs),
                        outcome=outcome, ok=step.status == "succeeded", status=step.status,
                        message=step.error_message or "", duration=duration_text(step.duration_ms),
                        side_effect=bool(inputs.get("side_effect")))


def _marker(kind: str, message: str) -> SessionEntry:
    return SessionEntry(kind=kind, message=message)


def _end(run: Any, transitions: Sequence[Any]) -> SessionEnd:
    """How the session ended (or that it is still open)."""
    if run.status in ("queued", "running"):
        return SessionEnd(status=run.status, code="", why="still open" if run.status == "running" else "not held yet")
    if run.status == "completed":  # a session completes only when its client closes it
        return SessionEnd(status=run.status, code="", why="closed by its client")
    last = next((t for t in reversed(transitions) if t.to_status == run.status), None)
    why = run.error_message or (last.reason if last is not None and last.reason else "")
    return SessionEnd(status=run.status, code=run.error_code or "", why=why or "closed by its client")


__all__ = ["PAUSE_MS", "SESSION_TEMPLATE", "is_session", "session_timeline", "target_of"]
