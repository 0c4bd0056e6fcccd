"""Plain, frozen snapshots of store rows: detached from any session, safe to pass between threads."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from browserq.store.models import RunStatus

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


@dataclass(frozen=True, slots=True)
class RunView:
    id: str
    template_id: int
    template_name: str
    template_version: str
    params: dict[str, Any]
    status: str
    attempt: int
    task_id: str | None
    worker: str | None
    queue: str | None
    idempotency_key: str | None
    tenant: str | None
    queued_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime | None
    timeout_s: float
    outputs: dict[str, Any] | None
    error_code: str | None
    error_message: str | None
    error_step_path: str | None
    checkpoint: dict[str, Any] | None
    secrets: str | None  # encrypted; see browserq.secrets
    created_at: datetime
    lease_owner: str | None = None
    lease_token: int = 0
    lease_expires_at: datetime | None = None
    takeovers: int = 0
    cancel_requested_at: datetime | None = None
    cancel_reason: str | None = None
    batch_id: str | None = None
    enqueued_at: datetime | None = None
    status_reason: str | None = None
    identity: str | None = None
    identity_pool: str | None = None
    template_hash: str | None = None  # sha256 of the template's canonical body
    warnings: list[dict[str, Any]] | None = None  # {step, code, message}: the result is partial
    human_wait_s: float | None = None  # the run's handoff budget (0007)
    notify_url: str | None = None  # where its outcome is POSTed (0007)

    @property
    def terminal(self) -> bool:
        """True when the run reached a final status (completed, failed, cancelled, needs_review)."""
        return RunStatus(self.status).terminal

    @property
    def cancel_requested(self) -> bool:
        return self.cancel_requested_at is not None


@dataclass(frozen=True, slots=True)
class HandoffView:
    """One wait of a run for a person (``outcome`` None while it waits)."""

    id: int
    run_id: str
    run_attempt: int
    step_path: str
    kind: str
    message: str
    until: str | None
    started_at: datetime
    deadline_at: datetime
    ended_at: datetime | None
    outcome: str | None
    live_base_url: str | None
    inputs: int


@dataclass(frozen=True, slots=True)
class StepView:
    id: int
    run_id: str
    run_attempt: int
    step_path: str
    step_id: str | None
    attempt: int
    action: str
    inputs: dict[str, Any]
    status: str
    error_code: str | None
    error_message: str | None
    retryable: bool | None
    started_at: datetime
    finished_at: datetime | None
    duration_ms: float | None
    url_before: str | None
    url_after: str | None
    output: Any
    warnings: list[dict[str, Any]] | None = None  # {code, message}: succeeded, but not in full
    events: list[dict[str, Any]] | None = None  # {type: dialog, dialog, message, answer, prompt?}


@dataclass(frozen=True, slots=True)
class ArtifactView:
    id: int
    run_id: str
    step_attempt_id: int | None
    kind: str
    path: str
    content_type: str
    size: int
    sha256: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TransitionView:
    id: int
    run_id: str
    at: datetime
    from_status: str | None  # None for the creation
    to_status: str
    reason: str
    worker: str | None


@dataclass(frozen=True, slots=True)
class Lease:
    """The right to execute a run until ``expires_at``; ``token`` fences every write it makes."""

    run_id: str
    owner: str
    token: int
    expires_at: datetime
    attempt: int
    takeover: bool  # taken over from a dead or expired worker (the run was already running)
    takeovers: int
    #: The run as the lease's transaction left it (checkpoint included): the attempt needs no
    #: second read of the run.
    run: RunView | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class BatchView:
    id: str
    template_name: str
    template_version: str
    total: int
    breaker: dict[str, Any] | None
    created_at: datetime
    finished_at: datetime | None
    breaker_tripped_at: datetime | None
    breaker_reason: str | None
    queued: int
    running: int
    retrying: int
    completed: int
    failed: int
    cancelled: int
    needs_review: int
    finished: int  # runs in a final status: completed + failed + cancelled + needs_review
    success_rate: float | None  # completed / finished; None while nothing has finished

    @property
    def tripped(self) -> bool:
        return self.breaker_tripped_at is not None

    @property
    def created(self) -> int:
        """How many of the batch's runs exist (``total`` is how many were meant to)."""
        return self.queued + self.running + self.retrying + self.finished


@dataclass(frozen=True, slots=True)
class IdentityView:
    """An identity row. ``storage_encrypted`` is the Fernet token of the storage_state JSON."""

    name: str
    pool: str | None
    fingerprint_seed: str
    proxy_id: str | None
    region: str | None
    locale: str | None
    timezone: str | None
    storage_encrypted: str | None
    storage_saved_at: datetime | None
    lease_run_id: str | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    lease_token: int
    uses: int
    created_at: datetime
    last_used_at: datetime | None
    disabled_reason: str | None

    @property
    def disabled(self) -> bool:
        return self.disabled_reason is not None

    def leased(self, now: datetime | None = None) -> bool:
        """True while a run holds an unexpired lease on the identity (at ``now``, default now)."""
        return (
            self.lease_run_id is not None
            and self.lease_expires_at is not None
            and self.lease_expires_at > (now or datetime.now(UTC))
        )


@dataclass(frozen=True, slots=True)
class IdentityLease:
    """The right to use an identity until ``expires_at``; ``token`` fences its writes
    (``store.identity_leases``: ``save_identity_storage``, ``set_identity_proxy``, renew, release)."""

    name: str
    token: int
    expires_at: datetime
    fingerprint_seed: str
    proxy_id: str | None
    region: str | None
    locale: str | None
    timezone: str | None
    storage_encrypted: str | None  # Fernet token of the storage_state JSON; None: fresh profile
    pool: str | None


V = TypeVar("V", bound="DataclassInstance")


def event_text(event: dict[str, Any]) -> str:
    """A step attempt's event as one line (``show``, the report):
    ``confirm 'Delete it?' → accepted (prompt: 'x')``."""
    if event.get("type") == "locator":  # what a session's ref command aimed at, as a locator
        found = json.dumps(event["selector"], ensure_ascii=False) if event.get("selector") is not None else "none"
        why = f" ({event['why']})" if event.get("why") else f" (by {event.get('by')})"
        return f"ref {event.get('ref')} → locator {found}{why}"
    if event.get("type") != "dialog":
        return f"{event.get('type')}: {event.get('count', '')}".rstrip(": ")
    prompt = f" (prompt: {event['prompt']!r})" if event.get("prompt") is not None else ""
    return f"{event.get('dialog')} {event.get('message', '')!r} → {event.get('answer')}{prompt}"


def to_view(cls: type[V], row: Any) -> V:
    """Copy the columns of an ORM row into the view dataclass ``cls``."""
    return cls(**{f.name: getattr(row, f.name) for f in fields(cls)})
