"""The batch circuit breaker: when too many of a batch's first runs failed, cancel the rest.

Checked by the worker that finishes each run of a batch (see ``run_batch`` in
:mod:`browserq.submit.batches` for how a batch and its breaker are recorded).
"""

from __future__ import annotations

import structlog

from browserq.store import Store

log = structlog.get_logger(__name__)


def check_batch(store: Store, batch_id: str) -> None:
    """Trip the batch's circuit breaker when too many of its first runs failed; close the batch
    when its last run ended."""
    summary = store.batches.batch_summary(batch_id)
    breaker = summary.breaker or {}
    min_runs = int(breaker.get("min_runs", 0) or 0)
    limit = breaker.get("max_failure_rate")
    if limit is not None and summary.finished >= max(min_runs, 1) and summary.breaker_tripped_at is None:
        failed = summary.failed + summary.needs_review
        rate = failed / summary.finished
        if rate > float(limit):
            reason = (
                f"circuit breaker: {failed} of the first {summary.finished} runs failed "
                f"({rate:.0%} > {float(limit):.0%})"
            )
            if store.batches.trip_breaker(batch_id, reason=reason):
                cancelled = store.batches.cancel_batch_remaining(batch_id, reason=reason)
                log.warning("batch circuit breaker tripped", batch_id=batch_id, cancelled=cancelled)
    store.batches.finish_batch_if_done(batch_id)


__all__ = ["check_batch"]
