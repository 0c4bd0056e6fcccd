"""The run journal: the runner's one door to persistence (see :mod:`browserq.journal.journal`
for the durability contract: it holds a run's records back and writes them in batches).
:mod:`.entries` is what it holds back; :mod:`.write_failures` what it does when a write fails;
:mod:`.lease_watch` the lease its writes renew; :mod:`.journals` opens one journal per run
attempt; :mod:`.handoffs` records waits for people."""

from __future__ import annotations

from browserq.journal.entries import MAX_RECORDED_OUTPUT_BYTES, StepRecord
from browserq.journal.handoffs import HandoffRecords
from browserq.journal.journal import RunJournal
from browserq.journal.journals import Journals
from browserq.journal.records import RunRecords
from browserq.store import ArtifactDir, IdentityLease, LeaseLost, StoreUnavailable
from browserq.store.artifacts import ArtifactStore, StoredFile

__all__ = [
    "MAX_RECORDED_OUTPUT_BYTES",
    "ArtifactDir",
    "ArtifactStore",
    "HandoffRecords",
    "IdentityLease",
    "Journals",
    "LeaseLost",
    "RunJournal",
    "RunRecords",
    "StepRecord",
    "StoreUnavailable",
    "StoredFile",
]
