"""Plain, frozen snapshots of store rows: detached from any session, safe to pass between threads."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, TypeVar

from browserq.store.models import RunStatus


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

    @property
    def terminal(self) -> bool:
        """True when the run reached a final status (completed, failed, cancelled, needs_review)."""
        return RunStatus(self.status).terminal


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


V = TypeVar("V")


def to_view(cls: type[V], row: Any) -> V:
    """Copy the columns of an ORM row into the view dataclass ``cls``."""
    return cls(**{f.name: getattr(row, f.name) for f in fields(cls)})  # type: ignore[arg-type]
