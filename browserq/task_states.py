"""Moved to :mod:`browserq.tasks.states` (shim for branches that still import it; removed after the merge)."""

from browserq.tasks.states import FAILED_STATUSES, RunTemplateRequest, record_revoke, run_id_of, settle

__all__ = ["FAILED_STATUSES", "RunTemplateRequest", "record_revoke", "run_id_of", "settle"]
