"""Resolving a ``needs_review`` run: a person's decision, recorded as a transition with who and why.

A run ends ``needs_review`` when a side effect's outcome is unknown (see
:mod:`browserq.runner.recovery`). Only a person can say what happened; :meth:`resolve_review`
records that decision — completed, failed, or queued again to retry from a step — in one
transaction that first checks the run still waits for it. Which steps a retry may start from is
decided above the store (:mod:`browserq.execute.resolve`), where the template is known.
"""

from __future__ import annotations

from typing import Any

from browserq.store.errors import NotInReview
from browserq.store.models import Run, RunStatus
from browserq.store.transitions import Transitions
from browserq.store.views import RunView

#: What a resolution may make of a needs_review run.
RESOLVED_TO = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.QUEUED})


class Reviews:
    """The one way out of ``needs_review`` besides a cancel: a person's recorded decision
    (``store.reviews``), a status change through ``transitions``."""

    def __init__(self, transitions: Transitions) -> None:
        self.transitions = transitions

    def resolve_review(
        self,
        run_id: str,
        to: RunStatus | str,
        *,
        reason: str,
        by: str,
        fields: dict[str, Any] | None = None,
    ) -> RunView:
        """Move a ``needs_review`` run to ``to`` (completed, failed or queued), recording ``by``
        as who decided and ``reason`` as why; :class:`NotInReview` for a run in any other status.

        ``fields``: run columns set with it (the error of a run resolved as completed is cleared,
        a retry's checkpoint carries the decision for its worker).
        """
        target = RunStatus(to)
        if target not in RESOLVED_TO:
            raise ValueError(
                f"a resolution ends a run completed, failed or queued, not {target.value}"
            )

        def in_review(run: Run) -> None:
            if run.status != RunStatus.NEEDS_REVIEW.value:
                raise NotInReview(run_id, run.status)

        return self.transitions.transition(run_id, target, reason=reason, worker=by, fields=fields, only_from=in_review)


__all__ = ["RESOLVED_TO", "Reviews"]
