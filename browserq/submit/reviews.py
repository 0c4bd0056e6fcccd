"""``browserq.resolve_run``: resolve a ``needs_review`` run from Python, as ``browserq resolve`` does.

The decision is recorded first (:func:`browserq.execute.resolve.resolve_review`); a retry is
then sent to the fleet under the run's own task id. When the broker cannot take it, the run
stays ``queued`` with the decision recorded and the sweeper sends it once the broker is back.
"""

from __future__ import annotations

import structlog
from kombu.exceptions import OperationalError as KombuOperationalError

from browserq.errors import BrokerUnavailable
from browserq.execute.resolve import Outcome, Review, operator_name, resolve_review
from browserq.settings import get_settings
from browserq.submit.services import producer_services

log = structlog.get_logger(__name__)


def resolve_run(
    run_id: str,
    outcome: Outcome,
    *,
    retry_from: str | int | None = None,
    rerun_unknown: bool = False,
    reason: str | None = None,
    by: str | None = None,
) -> str:
    """Resolve a ``needs_review`` run as ``"completed"``, ``"failed"`` or ``"retry"``; returns its
    status now (``queued`` for a retry, sent to a worker).

    ``retry_from``: the step path a retry starts from. The unknown step itself runs again only
    with ``rerun_unknown=True`` (the person checked it did not happen); a later step skips it.
    ``by`` defaults to the OS user. Raises ``NotInReview`` / ``ResolveRefused`` (nothing written).
    """
    from browserq.tasks.sweep import send_again

    settings = get_settings()
    store = producer_services().store
    review = Review(
        outcome=outcome,
        by=by or operator_name(),
        reason=reason,
        retry_from=None if retry_from is None else str(retry_from),
        rerun_unknown=rerun_unknown,
    )
    view = resolve_review(store, settings, run_id, review)
    if view.status == "queued":
        try:
            send_again(store, view, settings)
        except KombuOperationalError as exc:
            log.warning(
                "resolved run not sent now; the sweeper sends it", run_id=run_id, error=str(exc)
            )
            raise BrokerUnavailable(
                f"run {run_id} is resolved and queued, but the broker is unreachable ({exc}); the "
                "sweeper sends it when the broker is back"
            ) from exc
    return view.status


__all__ = ["resolve_run"]
