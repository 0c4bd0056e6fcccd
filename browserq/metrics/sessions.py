"""The session watcher that turns the agent sessions a worker process holds into metrics:
sessions opened and closed (by status and code), held now, their messages by action and outcome
and how long each took. A few in-memory (in a worker, mmapped-file) increments on the event loop."""

from __future__ import annotations

from browserq.metrics import definitions as m
from browserq.session_events import CommandAnswered, SessionHeld, SessionLetGo, SessionWatcher
from browserq.settings import Settings

CLOSED_STATUSES = frozenset({"completed", "cancelled", "failed", "lost"})
#: What a session is told besides its commands' actions (those are bounded by the template language).
MESSAGE_KINDS = frozenset({"snapshot", "batch"})


class SessionMetrics(SessionWatcher):
    """``browserq_sessions_*`` and ``browserq_session_command*`` (:mod:`browserq.metrics.definitions`)."""

    def held(self, event: SessionHeld) -> None:
        m.SESSIONS_OPENED.labels("takeover" if event.takeover else "opened").inc()
        m.SESSIONS_HELD.labels("open").inc()

    def answered(self, event: CommandAnswered) -> None:
        action = m.action_label(event.action)
        outcome = event.outcome if event.outcome in ("ok", "closed", "failed") else m.code_label(event.outcome)
        m.SESSION_COMMANDS.labels(action, outcome).inc()
        m.SESSION_COMMAND_DURATION.labels(action).observe(max(0.0, event.duration_s))

    def let_go(self, event: SessionLetGo) -> None:
        m.SESSIONS_HELD.labels("open").dec()
        m.SESSIONS_CLOSED.labels(m.one_of(event.status, CLOSED_STATUSES), m.code_label(event.code)).inc()


def session_metrics(settings: Settings) -> list[SessionWatcher]:
    """A worker's session metrics when metrics are on (``BROWSERQ_METRICS_PORT``), else none."""
    return [SessionMetrics()] if settings.metrics_port is not None else []


__all__ = ["SessionMetrics", "session_metrics"]
