"""What a worker process tells whoever watches the agent sessions it holds: Flower's progress,
metrics. The session twin of :mod:`browserq.run_events`.

A leaf module (of browserq it imports only the leaf :mod:`browserq.run_events`): :class:`browserq.sessions.host.SessionHost` tells,
and the packages that watch — ``metrics``, ``tasks`` — listen without importing the host.

A :class:`SessionWatcher` sees a session held (opened, or taken over from a lost worker), each
message it answered (a command, a batch, a snapshot) and the session let go (closed, or lost to
another worker). Watchers watch; they never steer: :class:`SessionWatchers` calls each in turn and
one that raises is logged once per kind and otherwise ignored. Events come from the runtime's
event-loop thread (``opened`` from the task's thread): a watcher that does I/O hands it to a
thread of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from browserq.run_events import tell_each


@dataclass(frozen=True)
class SessionHeld:
    """This process holds the session now (``takeover``: another worker held it before)."""

    run_id: str
    epoch: int
    takeover: bool
    at: float  # time.time()


@dataclass(frozen=True)
class CommandAnswered:
    """One message of a session answered: ``kind`` ``command``, ``batch`` or ``snapshot``;
    ``outcome`` ``ok``, the error code of a failed command, or ``closed`` (the session is gone).
    ``done``: messages this holder answered so far; ``url`` already redacted."""

    run_id: str
    kind: str
    action: str
    outcome: str
    duration_s: float
    epoch: int
    done: int
    url: str | None
    at: float  # time.time() when it was answered: the session is idle since then


@dataclass(frozen=True)
class SessionLetGo:
    """This process holds the session no more: ``status`` of its run (``completed``, ``cancelled``,
    ``failed``) with its ``code`` and ``why``, or ``lost`` (another worker takes it over)."""

    run_id: str
    status: str
    code: str | None
    why: str
    done: int


class SessionWatcher:
    """Watches sessions; override what you need (every method does nothing here)."""

    def held(self, event: SessionHeld) -> None:
        """A session is held by this process."""

    def answered(self, event: CommandAnswered) -> None:
        """A message of a held session was answered."""

    def let_go(self, event: SessionLetGo) -> None:
        """A session is no longer held by this process."""


class SessionWatchers(SessionWatcher):
    """Every watcher of this process, called in order; each one's failure is contained."""

    def __init__(self, watchers: Iterable[SessionWatcher] = ()) -> None:
        self._watchers = list(watchers)
        self._complained: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def add(self, watcher: SessionWatcher) -> None:
        with self._lock:
            self._watchers = [*self._watchers, watcher]

    def held(self, event: SessionHeld) -> None:
        self._tell("held", event)

    def answered(self, event: CommandAnswered) -> None:
        self._tell("answered", event)

    def let_go(self, event: SessionLetGo) -> None:
        self._tell("let_go", event)

    def _tell(self, kind: str, event: object) -> None:
        tell_each(self._watchers, kind, event, self._complained, "session watcher")


__all__ = ["CommandAnswered", "SessionHeld", "SessionLetGo", "SessionWatcher", "SessionWatchers"]
