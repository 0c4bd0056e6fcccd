"""Moved to :mod:`browserq.execute.accept` (shim for branches that still import it; removed after the merge)."""

from browserq.execute.accept import (
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_IDENTITY_NAME_LENGTH,
    PreparedRun,
    check_identity_request,
    check_run_options,
    check_template_pin,
    prepare_loaded,
    prepare_run,
    record_run,
)

__all__ = [
    "MAX_IDEMPOTENCY_KEY_LENGTH",
    "MAX_IDENTITY_NAME_LENGTH",
    "PreparedRun",
    "check_identity_request",
    "check_run_options",
    "check_template_pin",
    "prepare_loaded",
    "prepare_run",
    "record_run",
]
