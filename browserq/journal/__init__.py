"""The run journal: the runner's one door to persistence (see :mod:`browserq.journal.journal`
for the durability contract). :mod:`.batch` holds the records kept back and writes them."""

from __future__ import annotations

from browserq.journal.batch import StepRecord
from browserq.journal.journal import MAX_RECORDED_OUTPUT_BYTES, RunJournal
from browserq.store import ArtifactDir, IdentityLease, LeaseLost, Store, StoreUnavailable
from browserq.store.artifacts import ArtifactStore, StoredFile

__all__ = [
    "MAX_RECORDED_OUTPUT_BYTES",
    "ArtifactDir",
    "ArtifactStore",
    "IdentityLease",
    "LeaseLost",
    "RunJournal",
    "StepRecord",
    "Store",
    "StoreUnavailable",
    "StoredFile",
]
