"""Resolving a ``needs_review`` run: a person's decision, recorded as a transition with who and why.

A run ends ``needs_review`` when a side effect's outcome is unknown (see
:mod:`browserq.runner.recovery`). Only a person can say what happened; :meth:`resolve_review`
records that decision — completed, failed, or queued again to retry from a step — in one
transaction that first checks the run still waits for it. Which steps a retry may start from is
decided above the store (:mod:`browserq.execute.resolve`), where the template is known.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from browserq.errors import StoreError
from browserq.store.errors import NotInReview
from browserq.store.models import RunStatus, utcnow
from browserq.store.transitions import TransitionMethods
from browserq.store.views import RunView, to_view

#: What a resolution may make of a needs_review run.
RESOLVED_TO = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.QUEUED})


class ReviewMethods(TransitionMethods):
    """The one way out of ``needs_review`` besides a cancel: a person's recorded decision."""

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
        action = f"resolving run {run_id} as {target.value}"

        def body(s: Session, retried: bool) -> RunView:
            run = self._lock_run(s, run_id)
            if run is None:
                raise StoreError(f"{action}: no such run {run_id!r}")
            if retried and self._already_applied(s, run, target, reason):
                return to_view(RunView, run)
            if run.status != RunStatus.NEEDS_REVIEW.value:
                raise NotInReview(run_id, run.status)
            self._apply_transition(
                s, run, target, reason=reason, worker=by, now=utcnow(), fields=fields
            )
            s.flush()
            return to_view(RunView, run)

        return self._tx(action, body, write=True)


__all__ = ["RESOLVED_TO", "ReviewMethods"]
