"""``when:``: the condition under which a step, a repeat or a block runs at all.

One kind per condition: ``present``/``absent`` (a selector, waited for up to ``within_ms``),
``url`` (a glob, or a regex after ``re:``, matched against the page's URL, like ``wait: {url}``)
or ``if`` (an expression over params and outputs, :mod:`browserq.templates.expression`). A step
whose condition does not hold is recorded ``skipped`` with the reason; it is not an error.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, model_validator

from browserq.templates.expression import ExpressionError, parse_expression
from browserq.templates.fields import Selector, StrictModel
from browserq.templates.interpolate import Ref

#: How long ``present``/``absent`` wait for the page to agree by default, and at most: a
#: condition is a quick look (a banner that shows up with the page), not a wait step.
DEFAULT_WHEN_WAIT_MS = 1_000
MAX_WHEN_WAIT_MS = 30_000
KINDS = ("present", "absent", "url", "if")


def _expression(value: str | None) -> str | None:
    if value is not None:
        try:
            parse_expression(value)
        except ExpressionError as exc:
            raise ValueError(f"invalid if expression {value!r}: {exc}") from None
    return value


class WhenSpec(StrictModel):
    """Exactly one condition; ``within_ms`` bounds how long ``present``/``absent`` wait."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    present: Selector | None = None
    absent: Selector | None = None
    url: Annotated[str, Field(min_length=1)] | None = None
    if_: Annotated[str | None, AfterValidator(_expression)] = Field(None, alias="if")
    within_ms: Annotated[int, Field(ge=0, le=MAX_WHEN_WAIT_MS)] = DEFAULT_WHEN_WAIT_MS

    @model_validator(mode="after")
    def _one_kind(self) -> WhenSpec:
        given = [kind for kind in KINDS if self.value_of(kind) is not None]
        if len(given) != 1:
            got = f"; got {' and '.join(given)}" if given else ""
            raise ValueError(f"when needs exactly one of {', '.join(KINDS)}{got}")
        if "within_ms" in self.model_fields_set and given[0] not in ("present", "absent"):
            raise ValueError("when: within_ms only applies to present and absent")
        return self

    def value_of(self, kind: str) -> Any:
        return self.if_ if kind == "if" else getattr(self, kind)

    @property
    def kind(self) -> str:
        return next(kind for kind in KINDS if self.value_of(kind) is not None)


def expression_refs(text: str) -> list[Ref]:
    """An ``if`` expression's references as ``${...}`` would spell them (``params.x`` is
    ``${x}``), for the checks at template load; none when it does not parse."""
    try:
        names = parse_expression(text).names()
    except ExpressionError:
        return []
    return [Ref(".".join(n.parts[1:] if n.parts[0] == "params" else n.parts)) for n in names]
