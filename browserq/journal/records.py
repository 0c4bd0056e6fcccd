"""What the journals write to: the store's calls a run attempt's records need, and no other.

:class:`RunRecords` is a protocol: the :class:`browserq.store.Store` meets it, and the runner is
handed one only to pass it to :class:`browserq.journal.Journals`. Everything the runner keeps
reaches the database through these calls, made by the journal (step attempts and artifacts in
batches, the lease, the identity, waits for people and their live-view links).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from browserq.store.handoffs import FollowAnswer
from browserq.store.steps import ArtifactRow, StepEnd, StepRow, WrittenSteps
from browserq.store.views import ArtifactView, HandoffView, RunView


class RunRecords(Protocol):
    """The store as the run journal sees it (each call is one transaction, synchronous)."""

    # step attempts, checkpoints and artifact rows, in batches (journal/batch.py)
    def write_steps(
        self, run_id: str, records: Sequence[StepRow | StepEnd | ArtifactRow], *, token: int | None = None,
        checkpoint: dict[str, Any] | None = None, renew_ttl_s: float | None = None,
    ) -> WrittenSteps: ...

    def artifacts(self, run_id: str) -> list[ArtifactView]: ...  # the run's artifact budget so far

    # the run's lease (its heartbeat) and its identity
    def renew_lease(self, run_id: str, *, token: int, ttl_s: float) -> RunView: ...
    def save_identity_storage(self, name: str, *, token: int, storage_encrypted: str) -> None: ...
    def set_identity_proxy(self, name: str, *, token: int, proxy_id: str | None) -> None: ...

    # waits for people and the live view (journal/handoffs.py, the live view's follow links)
    def begin_handoff(
        self, run_id: str, *, token: int | None, run_attempt: int, step_path: str, kind: str, message: str,
        until: str | None, timeout_s: float, live_base_url: str | None,
    ) -> HandoffView: ...

    def end_handoff(
        self, run_id: str, *, token: int | None, handoff_id: int, outcome: str, inputs: int, resume: bool,
        reason: str,
    ) -> None: ...

    def mint_live_token(self, run_id: str, *, purpose: str, ttl_s: float | None = None) -> str | None: ...
    def redeem_live_token(self, token: str, *, handoff_id: int) -> bool: ...
    def begin_watch(self, run_id: str, *, token: int | None, run_attempt: int, live_base_url: str,
                    for_s: float) -> HandoffView: ...
    def end_watch(self, handoff_id: int) -> None: ...
    def mint_follow_token(self, run_id: str, *, handoff_id: int, ttl_s: float | None = None) -> str: ...
    def follow_handoff(self, token: str, *, handoff_id: int, ttl_s: float | None = None) -> FollowAnswer: ...


__all__ = ["RunRecords"]
