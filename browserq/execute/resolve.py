"""Resolving a ``needs_review`` run: the person who checked the site says what happened.

A side effect whose outcome is unknown stops the run (``needs_review``): browserq never runs it
again on its own. The person resolves it one of three ways, each recorded as a transition with
who decided and why (:meth:`browserq.store.reviews.Reviews.resolve_review`):

    completed          it happened and nothing more is needed: the run ends completed
    failed             the run ends failed (its OUTCOME_UNKNOWN error kept)
    retry from STEP    queued again: it resumes from its last checkpoint as any resume does (the
                       read-only steps after the checkpoint run again) and
                       - STEP is the unknown step: it runs again, only when the person says they
                         checked that it did not happen (``rerun_unknown``);
                       - STEP is a later step: the unknown step and every step before STEP are
                         skipped, each recorded as skipped by the person's decision.

A retry cannot start at or before the checkpoint (those steps' effects are kept) nor between
the checkpoint and the unknown step (those run again anyway): :class:`ResolveRefused` says so.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from typing import Any, Literal

from browserq.errors import StoreError
from browserq.execute.errors import ResolveRefused
from browserq.execute.run_request import StoredTemplates
from browserq.redact import mask
from browserq.runner.checkpoint import Resolution, parse_path, path_key
from browserq.settings import Settings
from browserq.store import RunView, Store
from browserq.store.errors import NotInReview
from browserq.templates import LoadedTemplate, RepeatStep, children

Outcome = Literal["completed", "failed", "retry"]
OUTCOMES: tuple[str, ...] = ("completed", "failed", "retry")


@dataclass(frozen=True)
class Review:
    """A person's decision on a needs_review run."""

    outcome: Outcome
    by: str
    reason: str | None = None
    retry_from: str | None = None  # a step path as ``browserq show`` lists it: 3, 1[2].0
    rerun_unknown: bool = False  # "I checked: the unknown step did not happen, run it again"


def operator_name() -> str:
    """Who resolves when nobody says: the OS user."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's arbitrary uid)
        return "unknown operator"


def resolve_review(store: Store, settings: Settings, run_id: str, review: Review) -> RunView:
    """Record ``review`` for the run (completed, failed, or queued for a retry) and return it.

    Raises :class:`NotInReview` for a run that is not ``needs_review`` and :class:`ResolveRefused`
    for a retry that would re-run the unknown step without the person saying so, or start where
    no retry can. A retry is only recorded here: the caller sends it to a worker or runs it.
    """
    run = store.runs.get_run(run_id)
    if run is None:
        raise StoreError(f"no such run {run_id!r}")
    if run.status != "needs_review":
        raise NotInReview(run_id, run.status)
    if review.outcome not in OUTCOMES:
        raise ResolveRefused(
            f"a run is resolved as completed, failed or retry, not {review.outcome!r}"
        )
    said = f"; reason: {review.reason}" if review.reason else ""
    if review.outcome != "retry":
        if review.retry_from is not None or review.rerun_unknown:
            raise ResolveRefused(
                f"a step to retry from goes with a retry, not with {review.outcome}"
            )
        cleared = {"error_code": None, "error_message": None, "error_step_path": None}
        return store.reviews.resolve_review(
            run_id,
            review.outcome,
            by=review.by,
            reason=f"resolved by {review.by}: {review.outcome}{said}",
            fields=cleared if review.outcome == "completed" else None,
        )
    loaded, names = StoredTemplates(store, settings).get(run.template_id)
    if not run.secrets and any((run.params or {}).get(n) == mask(n) for n in names):
        raise ResolveRefused(
            f"run {run_id}'s secret params lived only in the memory of the process that ran it "
            "(an in-process run keeps them there), so it cannot be retried: resolve it as completed "
            "or failed, and run the template again if needed"
        )
    decision, checkpoint = retry_plan(run, loaded, review)
    return store.reviews.resolve_review(
        run_id,
        "queued",
        by=review.by,
        reason=f"resolved by {review.by}: {decision}{said}",
        fields={"checkpoint": checkpoint},
    )


def retry_plan(
    run: RunView, loaded: LoadedTemplate, review: Review
) -> tuple[str, dict[str, Any] | None]:
    """What a retry from ``review.retry_from`` does, in words, and the checkpoint record it
    resumes from (the run's own, with the decision to skip added when it skips)."""
    unknown, start = run.error_step_path, review.retry_from
    if unknown is None or "~" in unknown:
        raise ResolveRefused(
            f"run {run.id} records no side effect with an unknown outcome to retry around"
        )
    if start is None:
        raise ResolveRefused("a retry needs the step to start from (--retry-from STEP)")
    action = _step_at(loaded, start, run.template_name)
    record = {k: v for k, v in (run.checkpoint or {}).items() if k != "resolution"}
    covered = record.get("path")
    if covered is not None and path_key(start) <= path_key(covered):
        raise ResolveRefused(
            f"step {start} is covered by the run's last checkpoint (taken after step {covered}): it "
            f"ran and its effects are kept; a retry starts at a step after {covered}"
        )
    if path_key(start) < path_key(unknown):
        raise ResolveRefused(
            f"step {start} comes before step {unknown}, whose outcome is unknown: a retry runs the "
            f"steps between the checkpoint and step {unknown} again anyway; retry from step {unknown} "
            "(after checking it did not happen) or from a later step (skipping it)"
        )
    if path_key(start) == path_key(unknown):
        if not review.rerun_unknown:
            raise ResolveRefused(
                f"step {unknown} ({action}) changes the world and may or may not have happened; "
                f"retrying from it runs it again. Check the site first: if it did not happen, say so "
                f"with --rerun-unknown; if it did, retry from the step after it, which skips it"
            )
        return (
            f"retry from step {unknown}, run again ({review.by} checked it had not happened)",
            record or None,
        )
    if review.rerun_unknown:
        raise ResolveRefused(
            f"--rerun-unknown is for retrying from step {unknown} itself; a retry from step {start} skips it"
        )
    record["resolution"] = Resolution(unknown, start, review.by, review.reason).to_record()
    return (
        f"retry from step {start}, skipping step {unknown} (outcome unknown) and the steps before {start}",
        record,
    )


def _step_at(loaded: LoadedTemplate, path: str, name: str) -> str:
    """The action (or ``repeat``/``block``) of the step at an execution path; refused when the
    template has no such step (a pass is given exactly for the steps inside a repeat)."""
    hint = f"template {name} has no step {path!r} (paths as `browserq show` lists them: 3, 1[2].0)"
    try:
        segments = parse_path(path)
    except ValueError:
        raise ResolveRefused(hint) from None
    steps: list[Any] | None = loaded.template.steps
    step: Any = None
    for depth, (index, repeat_pass) in enumerate(segments):
        if steps is None or index >= len(steps):
            raise ResolveRefused(hint)
        step = steps[index]
        if depth == len(segments) - 1:
            if repeat_pass is not None:  # "1[2]" is a pass, not a step
                raise ResolveRefused(hint)
        elif isinstance(step, RepeatStep) != (repeat_pass is not None) or repeat_pass == 0:
            raise ResolveRefused(hint)
        else:
            steps = children(step)
    return getattr(step, "action", None) or ("repeat" if isinstance(step, RepeatStep) else "block")


__all__ = ["OUTCOMES", "Outcome", "Review", "operator_name", "resolve_review", "retry_plan"]
