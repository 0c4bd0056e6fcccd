"""The run journal: the runner's one door to persistence (see :mod:`browserq.journal.journal`
for the durability contract). :mod:`.batch` holds the records kept back and writes them;
:mod:`.journals` opens one journal per run attempt; :mod:`.handoffs` records waits for people."""

from __future__ import annotations

from browserq.journal.batch import StepRecord
from browserq.journal.handoffs import HandoffRecords
from browserq.journal.journal import MAX_RECORDED_OUTPUT_BYTES, RunJournal
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
