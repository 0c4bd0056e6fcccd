"""Moved to :mod:`browserq.submit.batches` (shim for branches that still import it; removed after the merge)."""

from browserq.submit.batches import BatchHandle, batch_summary, run_batch

__all__ = ["BatchHandle", "batch_summary", "run_batch"]
