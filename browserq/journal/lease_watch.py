"""The run's lease as the journal's writes renew it on the way.

Every batch write of a leased run also renews the run's lease and reads its cancel request, in
its own fenced transaction (:meth:`browserq.store.steps.Steps.write_steps`). :class:`LeaseWatch`
remembers when one last did and what it saw, so the heartbeat's own renewal
(:meth:`browserq.journal.RunJournal.renew_lease`) can skip its transaction right after one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from browserq.store.leases import LeaseSeen

#: A lease renewal a batch write made at most this long ago (and at most a third of the lease)
#: stands in for the heartbeat's own: its transaction is skipped. A cancel request is then seen
#: by the writes (at least every ``flush_ms`` while steps run) or by the heartbeat after next.
FRESH_RENEWAL_S = 1.0

#: Batch writes renew the run's lease at most this often (the heartbeat skips its own renewal
#: after one that is less than FRESH_RENEWAL_S old).
RENEW_EVERY_S = 0.5


@dataclass
class LeaseWatch:
    """The run's lease as the journal's fenced writes renew it on the way (``ttl_s``): when one
    last did (``time.monotonic()``) and the cancel request one saw — what lets the heartbeat skip
    its own transaction while steps are being written. Written from the writer thread."""

    ttl_s: float
    renewed_at: float | None = None
    cancel_reason: str | None = None

    def due(self) -> bool:
        """Whether the next write should renew: not when one did less than RENEW_EVERY_S ago
        (with ``flush_ms=0`` every record is a write: one lease update per record is waste)."""
        return self.renewed_at is None or time.monotonic() - self.renewed_at >= RENEW_EVERY_S

    def saw(self, lease: LeaseSeen | None) -> None:
        if lease is not None and lease.renewed:
            self.renewed_at = time.monotonic()
            self.cancel_reason = self.cancel_reason or lease.cancel_reason

    def fresh(self, ttl_s: float) -> bool:
        """Whether a write renewed the lease (and saw no cancel request) so recently that the
        heartbeat's renewal for ``ttl_s`` needs no transaction: within FRESH_RENEWAL_S and a
        third of the lease."""
        return self.renewed_at is not None and time.monotonic() - self.renewed_at < min(ttl_s / 3, FRESH_RENEWAL_S)


__all__ = ["FRESH_RENEWAL_S", "RENEW_EVERY_S", "LeaseWatch"]
