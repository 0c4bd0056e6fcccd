"""The records step writes are handed and return: a step attempt's start (:class:`StepStart`),
and the records of a batch :meth:`browserq.store.steps.Steps.write_steps` writes in one
transaction — a new step row, the end of a stored one, an artifact row — and what it wrote.

The journal builds them from what it held back (:mod:`browserq.journal.entries`); a run's end
writes its last ones with it (:meth:`browserq.store.transitions.Transitions.finish_run`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from browserq.store.leases import LeaseSeen


class StepStart(TypedDict):
    """What a step attempt's record starts with (the keyword arguments of ``start_step`` and
    ``record_skipped_step``)."""

    run_id: str
    run_attempt: int
    step_path: str
    step_id: str | None
    attempt: int
    action: str
    inputs: dict[str, Any]
    url_before: str | None
    token: NotRequired[int | None]


@dataclass(frozen=True)
class StepRow:
    """A step attempt :meth:`Steps.write_steps` inserts: its start (``start``: the fields of
    :class:`StepStart` but the token) at ``started_at``, and, when it already ended, how
    (``end``: :meth:`Steps.finish_step`'s fields, ``status`` included) at ``finished_at``."""

    start: dict[str, Any]
    started_at: datetime
    end: dict[str, Any] | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True)
class StepEnd:
    """The end of a step attempt already stored (``finish_step``'s fields, at ``finished_at``)."""

    step_attempt_id: int
    end: dict[str, Any]
    finished_at: datetime


@dataclass(frozen=True)
class ArtifactRow:
    """An artifact row (``add_artifact``'s fields but the ids), linked to a stored step attempt
    (``step_attempt_id``) or to the ``step_ref``-th record of the same batch."""

    fields: dict[str, Any]
    step_attempt_id: int | None = None
    step_ref: int | None = None


@dataclass(frozen=True)
class WrittenSteps:
    """What :meth:`Steps.write_steps` wrote: each record's row id, in order, and what it saw
    of the run's lease when it renewed it (None when not asked to)."""

    ids: list[int | None]
    lease: LeaseSeen | None = None


__all__ = ["ArtifactRow", "StepEnd", "StepRow", "StepStart", "WrittenSteps"]
