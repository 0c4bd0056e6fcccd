"""Steps that hold steps: ``repeat`` (a bounded loop) and a block (``steps:``, one ``when:`` for
several steps). Their children are the ``Step`` union of :mod:`browserq.templates.steps`, which
rebuilds these models once the union exists (they refer to it by name).

Step paths: a repeat's children are ``1[2].0`` (step 0 of pass 2 of the repeat at step 1), a
block's are ``3.0``, ``3.1`` (the block at step 3 has no passes).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from browserq.templates.conditions import WhenSpec
from browserq.templates.fields import Selector, StepId, StrictModel, repeat_max

if TYPE_CHECKING:
    from browserq.templates.steps import Step


class RepeatSpec(StrictModel):
    """A bounded loop. ``max`` is an int or ``${param}`` of an int param with its own max."""

    max: Annotated[int | str, BeforeValidator(repeat_max)]
    until_missing: Selector | None = None
    while_present: Selector | None = None
    steps: Annotated[list[Step], Field(min_length=1)]

    @model_validator(mode="after")
    def _one_stop_condition(self) -> RepeatSpec:
        if self.until_missing is not None and self.while_present is not None:
            raise ValueError("repeat takes at most one of until_missing and while_present")
        return self


class RepeatStep(StrictModel):
    """Runs ``repeat.steps`` up to ``repeat.max`` times (not at all when ``when`` does not hold)."""

    id: StepId | None = None
    description: str | None = None
    when: WhenSpec | None = None
    repeat: RepeatSpec


class BlockStep(StrictModel):
    """Runs ``steps`` in order when ``when`` holds; skipped as one step when it does not."""

    id: StepId | None = None
    description: str | None = None
    when: WhenSpec | None = None
    steps: Annotated[list[Step], Field(min_length=1)]


def children(step: Any) -> list[Any] | None:
    """The steps inside a repeat or a block; None for an action step."""
    if isinstance(step, RepeatStep):
        return step.repeat.steps
    if isinstance(step, BlockStep):
        return step.steps
    return None


def iter_steps(steps: Sequence[Any]) -> Iterator[Any]:
    """Every step in document order, descending into repeats and blocks (the holder first)."""
    for step in steps:
        yield step
        inner = children(step)
        if inner is not None:
            yield from iter_steps(inner)
