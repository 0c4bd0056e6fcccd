"""Every error the run store raises on purpose, each with its policy (what the caller does next).

    StoreError (browserq.errors)  the run store (database) failed
    ├── StoreUnavailable          the database stayed unreachable for the whole retry window   WAIT
    ├── DuplicateRun              an idempotency key another run already has                   PERMANENT
    ├── IllegalTransition         a status change the state machine forbids (a caller's bug)   PERMANENT
    ├── RunAlreadyFinished        the run is final; it will not be run again                    PERMANENT
    ├── NotInReview               only a needs_review run can be resolved                       PERMANENT
    ├── LeaseBusy                 another live worker holds the run's lease                     WAIT
    ├── LeaseLost                 a fenced write whose token is no longer the run's             PERMANENT
    └── IdentityError             an identity cannot be used                                    PERMANENT
        ├── IdentityNotFound      no such identity, or a pool with none usable  IDENTITY_UNAVAILABLE
        ├── IdentityDisabled      the identity was disabled                     IDENTITY_UNAVAILABLE
        ├── IdentityBusy          leased to another live run (or the whole pool is)             WAIT
        └── IdentityLeaseLost     a fenced identity write whose token is no longer current      PERMANENT
    StepFailed (browserq.errors)
    └── ArtifactPathDenied        an artifact path would leave the artifacts dir  PATH_DENIED, PERMANENT

``WAIT`` errors say how long to wait in ``retry_in_s``, computed when it is read (the execution
layer asks when it decides), so the answer is never stale.
"""

from __future__ import annotations

import random
import time
from datetime import datetime
from typing import TYPE_CHECKING

from browserq.errors import Codes, ErrorClass, StepFailed, StoreError
from browserq.store.models import RunStatus
from browserq.store.states import LEGAL

if TYPE_CHECKING:
    from browserq.store.views import RunView

#: How long an IdentityBusy without a known lease expiry asks the caller to wait.
IDENTITY_BUSY_DEFAULT_WAIT_S = 5.0


def _seconds_until(moment: datetime, now: datetime | None = None) -> float:
    """Seconds from ``now`` (the database's clock that wrote ``moment``; else ours) to ``moment``."""
    return moment.timestamp() - (now.timestamp() if now is not None else time.time())


#: How long a run waits (jittered up to twice this) before it tries a database that stayed
#: unavailable for a whole retry window again; its next try waits out another window itself.
STORE_UNAVAILABLE_WAIT_S = 5.0


class StoreUnavailable(StoreError):
    """The database stayed unreachable (or locked) for the whole retry window."""

    policy = ErrorClass.WAIT

    @property
    def retry_in_s(self) -> float:  # type: ignore[override]  # computed; read-only over the base's class default
        """A few seconds, jittered, so that runs cut off together do not come back together."""
        return STORE_UNAVAILABLE_WAIT_S * (1 + random.random())


class DuplicateRun(StoreError):
    """``create_run`` with an idempotency key that another run already has."""

    def __init__(self, idempotency_key: str, existing_run_id: str | None) -> None:
        self.idempotency_key = idempotency_key
        self.existing_run_id = existing_run_id
        super().__init__(
            f"idempotency key {idempotency_key!r} is already used by run {existing_run_id}"
        )


class IllegalTransition(StoreError):
    """A status change the state machine does not allow (a bug in the caller)."""

    def __init__(
        self,
        run_id: str | None,
        frm: RunStatus | str,
        to: RunStatus | str,
        note: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.from_status = RunStatus(frm)
        self.to_status = RunStatus(to)
        self.legal = LEGAL[self.from_status]
        targets = ", ".join(sorted(s.value for s in self.legal)) or "none (it is final)"
        subject = f"run {run_id}" if run_id is not None else "a run"
        message = (
            f"illegal transition of {subject}: {self.from_status.value} → {self.to_status.value}; "
            f"from {self.from_status.value} it may go to: {targets}"
        )
        if note:
            message += f" ({note})"
        super().__init__(message)


class RunAlreadyFinished(StoreError):
    """The run is in a final status (completed, failed, cancelled or needs_review)."""

    def __init__(self, run: RunView) -> None:
        self.run = run
        super().__init__(f"run {run.id} is already {run.status}; it will not be run again")


class NotInReview(StoreError):
    """``resolve`` on a run that is not ``needs_review``: nothing waits for a person's decision."""

    def __init__(self, run_id: str, status: str) -> None:
        self.run_id, self.status = run_id, status
        super().__init__(
            f"run {run_id} is {status}, not needs_review: only a run whose side effect has an "
            "unknown outcome waits to be resolved"
        )


class LeaseBusy(StoreError):
    """Another live worker holds the run's lease: wait until it could have expired."""

    policy = ErrorClass.WAIT

    def __init__(
        self, run_id: str, holder: str, expires_at: datetime, *, now: datetime | None = None
    ) -> None:
        self.run_id = run_id
        self.holder = holder
        self.expires_at = expires_at
        self.now = now  # the database's time when the lease was seen: expires_at is on its clock
        super().__init__(
            f"run {run_id} is being run by {holder} (lease valid until {expires_at.isoformat()})"
        )

    @property
    def retry_in_s(self) -> float:  # type: ignore[override]  # computed; read-only over the base's class default
        """Seconds until the holder's lease runs out, plus one (at least 1 s)."""
        return max(1.0, _seconds_until(self.expires_at, self.now) + 1.0)


class LeaseLost(StoreError):
    """A fenced write with a token that is no longer the run's: another worker took it over,
    the lease was revoked, or the run has finished."""

    def __init__(
        self,
        run_id: str,
        token: int,
        *,
        current_token: int,
        holder: str | None,
        status: str,
        action: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.token = token
        self.current_token = current_token
        self.holder = holder
        self.status = status
        if current_token != token:
            now = f"token {current_token}" + (f", held by {holder}" if holder else ", not held")
            why = f"the run has moved on ({now}; status {status})"
        elif status not in (RunStatus.RUNNING.value, RunStatus.WAITING_FOR_HUMAN.value):
            why = f"the run is {status}"
        else:
            why = "the lease was released"
        if action:
            super().__init__(f"{action}: the lease with token {token} is lost: {why}")
        else:
            super().__init__(f"the lease on run {run_id} with token {token} is lost: {why}")


class IdentityError(StoreError):
    """Base of the identity errors."""


class IdentityNotFound(IdentityError):
    """No identity with that name, or a pool with no usable identity (empty, unknown, or every
    one of its identities disabled)."""

    code = Codes.IDENTITY_UNAVAILABLE

    def __init__(self, message: str, *, name: str | None = None, pool: str | None = None) -> None:
        self.name = name
        self.pool = pool
        super().__init__(message)


class IdentityDisabled(IdentityError):
    """The identity was disabled (``store.identities.disable_identity``); ``reason`` says why.
    Not an :class:`IdentityBusy`: waiting does not help."""

    code = Codes.IDENTITY_UNAVAILABLE

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"identity {name!r} is disabled: {reason}")


class IdentityBusy(IdentityError):
    """The identity is leased to another live run; or (``name`` None) every usable identity of
    ``pool`` is. ``expires_at``: when the (earliest) blocking lease runs out, if known."""

    policy = ErrorClass.WAIT

    def __init__(
        self,
        name: str | None,
        holder_run_id: str | None,
        expires_at: datetime | None,
        *,
        pool: str | None = None,
        pool_size: int | None = None,
        leased: int | None = None,
        disabled: int = 0,
        now: datetime | None = None,
    ) -> None:
        self.now = now  # the database's time when the lease was seen: expires_at is on its clock
        self.name = name
        self.holder_run_id = holder_run_id
        self.expires_at = expires_at
        self.pool = pool
        self.pool_size = pool_size
        self.leased = leased
        self.disabled = disabled
        until = f" until {expires_at.isoformat()}" if expires_at else ""
        if name is not None:
            message = f"identity {name!r} is leased to run {holder_run_id}{until}"
        else:
            parts = [f"{leased} leased"] if leased is not None else []
            if disabled:
                parts.append(f"{disabled} disabled")
            detail = f" ({', '.join(parts)})" if parts else ""
            message = (
                f"pool {pool!r} has no free identity: all {pool_size} of its identities are "
                f"taken{detail}"
            )
            if expires_at is not None:
                message += f"; the first lease runs out at {expires_at.isoformat()}"
        super().__init__(message)

    @property
    def retry_in_s(self) -> float:  # type: ignore[override]  # computed; read-only over the base's class default
        """Seconds until the earliest blocking lease runs out (at least 1 s; 5 s if unknown)."""
        if self.expires_at is None:
            return IDENTITY_BUSY_DEFAULT_WAIT_S
        return max(1.0, _seconds_until(self.expires_at, self.now))


class IdentityLeaseLost(IdentityError):
    """A fenced identity write with a token that is no longer the identity's: another run was
    granted it (or the lease was released, for a renewal), or the identity was deleted."""

    def __init__(
        self,
        name: str,
        token: int,
        *,
        current_token: int | None,
        holder_run_id: str | None,
        action: str | None = None,
    ) -> None:
        self.name = name
        self.token = token
        self.current_token = current_token
        self.holder_run_id = holder_run_id
        if current_token is None:
            why = "the identity no longer exists"
        elif current_token != token:
            held = f"leased to run {holder_run_id}" if holder_run_id else "not leased"
            why = f"it has moved on (token {current_token}, {held})"
        else:
            why = "the lease was released"
        prefix = action or f"identity {name!r}"
        super().__init__(f"{prefix}: the identity lease with token {token} is lost: {why}")


class ArtifactPathDenied(StepFailed, ValueError):
    """An artifact name or path would leave the artifacts directory (``PATH_DENIED``).

    Both a ``StepFailed`` (the runner records it like any step failure; its policy is its code's,
    PERMANENT) and a ``ValueError``.
    """

    def __init__(self, message: str) -> None:
        super().__init__(Codes.PATH_DENIED, message)


__all__ = [
    "IDENTITY_BUSY_DEFAULT_WAIT_S",
    "STORE_UNAVAILABLE_WAIT_S",
    "ArtifactPathDenied",
    "DuplicateRun",
    "IdentityBusy",
    "IdentityDisabled",
    "IdentityError",
    "IdentityLeaseLost",
    "IdentityNotFound",
    "IllegalTransition",
    "LeaseBusy",
    "LeaseLost",
    "NotInReview",
    "RunAlreadyFinished",
    "StoreUnavailable",
]
