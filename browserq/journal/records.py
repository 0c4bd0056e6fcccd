"""What the journals write to: the store's repositories a run attempt's records need, and no other.

:class:`RunRecords` holds them: the step attempts and artifact rows (written in batches, and the
run's artifact budget read from them), the run's lease (its heartbeat), the identity leased to it
(its storage and proxy) and the waits for people with their live-view links. Whoever builds the
runner hands it one (``browserq.execute.runtime``); the runner only passes it on to
:class:`browserq.journal.Journals`, so everything it keeps reaches the database through the
journal, and never through the rest of the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from browserq.store.handoffs import Handoffs
from browserq.store.identity_leases import IdentityLeases
from browserq.store.leases import Leases
from browserq.store.steps import Steps

if TYPE_CHECKING:
    from browserq.store import Store


@dataclass(frozen=True, slots=True)
class RunRecords:
    """The repositories a run's journal writes (each call one synchronous transaction)."""

    steps: Steps  # step attempts, checkpoints and artifact rows, in batches (journal/journal.py)
    leases: Leases  # the run's lease: its heartbeat
    identity_leases: IdentityLeases  # the leased identity's storage and proxy
    handoffs: Handoffs  # waits for people and the live view (journal/handoffs.py, follow links)

    @classmethod
    def of(cls, store: Store) -> RunRecords:
        """The four repositories of ``store`` a run's journal writes."""
        return cls(steps=store.steps, leases=store.leases, identity_leases=store.identity_leases,
                   handoffs=store.handoffs)


__all__ = ["RunRecords"]
