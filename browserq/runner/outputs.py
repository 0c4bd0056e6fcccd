"""Moved to :mod:`browserq.actions.outputs` (kept so old imports work; removed after the merge)."""

from browserq.actions.outputs import (
    OutputBudget,
    check_step_output,
    evaluate_bounded,
    not_data,
    too_large,
)

__all__ = ["OutputBudget", "check_step_output", "evaluate_bounded", "not_data", "too_large"]
