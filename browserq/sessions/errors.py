"""What a session's client is told when a command or the session itself cannot go on (drawn in
:mod:`browserq.errors`).

    BrowserqError
    └── SessionError
        ├── CommandFailed    PERMANENT  one command failed; the session stays usable
        ├── SessionClosed    PERMANENT  the session is closed, expired, or its worker was lost
        ├── SessionCapacity  WAIT       no room for another session now: try after retry_after_s
        └── FreezeRefused    PERMANENT  the session cannot be frozen into a template as asked
"""

from __future__ import annotations

from browserq.errors import BrowserqError, ErrorClass


class SessionError(BrowserqError):
    """An agent session could not do what its client asked."""


class CommandFailed(SessionError):
    """One command failed the way a template step fails (its error ``code``: SELECTOR_NOT_FOUND,
    INVALID_STEP_INPUT, URL_DENIED, REF_STALE…); the session is still open for the next one.
    ``retryable``: sending it again may work; ``epoch``: the session's holder epoch when it failed
    (it changes when another worker takes the session over)."""

    def __init__(self, code: str, message: str, *, retryable: bool = False, epoch: int | None = None) -> None:
        self.code, self.message, self.retryable, self.epoch = code, message, retryable, epoch
        super().__init__(f"{code}: {message}")


class SessionClosed(SessionError):
    """The session is gone: closed by its client, idle past its timeout, past its lifetime, or
    lost with its infrastructure. ``why`` says which; a new session is needed."""

    def __init__(self, why: str, *, session_id: str | None = None) -> None:
        self.why, self.session_id = why, session_id
        super().__init__(f"session {session_id or '?'} is closed: {why}")


class SessionCapacity(SessionError):
    """No room for another session (per process or per fleet): open again after ``retry_after_s``."""

    policy = ErrorClass.WAIT

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        self.retry_after_s = self.retry_in_s = retry_after_s
        super().__init__(f"{message}; try again in {retry_after_s:g} s")


class FreezeRefused(SessionError):
    """``save_template`` cannot freeze the session as asked; nothing was written. The message says
    what to change (a param's type, a secret to name, a URL outside allowed_domains…)."""

    def __init__(self, why: str, *, session_id: str | None = None) -> None:
        self.why, self.session_id = why, session_id
        super().__init__(f"session {session_id or '?'} cannot be frozen: {why}")


__all__ = ["CommandFailed", "FreezeRefused", "SessionCapacity", "SessionClosed", "SessionError"]
