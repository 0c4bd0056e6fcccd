"""Where the runner's journals come from: the one object that holds the store's repositories for
the runner.

:class:`TemplateRunner <browserq.runner.TemplateRunner>` is handed the :class:`RunRecords` (the
repositories its runs' records need) only to hand them here: every record a run makes goes
through the :class:`RunJournal` that :meth:`Journals.open` gives it, and the live view's follow
links (per process, not per run) come from :meth:`Journals.live_follow`. The runner itself never names the store
(``tests/test_architecture.py`` keeps it so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from browserq.journal.budget import budgeted
from browserq.journal.journal import RunJournal
from browserq.journal.records import RunRecords
from browserq.redact import Redactor
from browserq.settings import Settings
from browserq.store import IdentityLease
from browserq.store.artifacts import ArtifactStore

if TYPE_CHECKING:
    from browserq.live.session import Follow

class Journals:
    """Opens one :class:`RunJournal` per run attempt over the run records and the artifact store."""

    def __init__(self, records: RunRecords, artifacts: ArtifactStore, settings: Settings) -> None:
        self._records = records
        self.artifacts = artifacts
        self.settings = settings  # read at each open: BROWSERQ_JOURNAL_FLUSH_MS, the artifact budget

    def open(
        self, *, run_id: str, run_attempt: int, token: int | None, redactor: Redactor,
        identity: IdentityLease | None, lease_ttl_s: float,
    ) -> RunJournal:
        """The journal of one run attempt; its artifacts count against the run's artifact budget."""
        return RunJournal(
            self._records,
            budgeted(self._records.steps, self.artifacts, run_id, self.settings.max_run_artifact_bytes),
            run_id=run_id,
            run_attempt=run_attempt,
            token=token,
            redactor=redactor,
            identity=identity,
            flush_ms=self.settings.journal_flush_ms,
            lease_ttl_s=lease_ttl_s,
        )

    def live_follow(self, ttl_s: float) -> Follow:
        """How this process's live-view server lets a person's page follow a run elsewhere."""
        from browserq.live.session import store_follow  # the live view loads only when needed

        return store_follow(self._records.handoffs, ttl_s)


__all__ = ["Journals"]
