"""The steps of a template: one pydantic model per action, repeats, and the tagged ``Step`` union.

Rules that only involve one step (``exactly one of pixels/selector/to``) live here; rules that
need the whole template (references, duplicate ids, domains, limits) live in
:mod:`browserq.templates.checks`, run by the loader on the raw YAML to report every problem at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BeforeValidator, Discriminator, Field, Tag, field_validator, model_validator

from browserq.templates.fields import (
    MAX_CLICK_COUNT,
    MAX_EXTRACT_LIMIT,
    MAX_KEY_DELAY_MS,
    MAX_SCROLL_PIXELS,
    MAX_SETTLE_MS,
    MAX_WAIT_MS,
    OutputName,
    Retries,
    Selector,
    StepId,
    StepSeconds,
    StrictModel,
    Text,
    exactly_one,
    repeat_max,
    text_or_texts,
)


class Postcondition(StrictModel):
    """How to tell that a side effect happened: probed when its outcome is unknown after a crash.

    ``url`` (optional) is opened first; then every given check must hold.
    """

    url: str | None = None
    selector: Selector | None = None
    text: Text | None = None
    url_matches: str | None = None

    @model_validator(mode="after")
    def _something_to_check(self) -> Postcondition:
        if self.selector is None and self.text is None and self.url_matches is None:
            raise ValueError("postcondition needs at least one of selector, text, url_matches")
        return self


class ActionStep(StrictModel):
    """Fields every action step has; subclasses pin ``action`` and add their own."""

    COMMON_FIELDS: ClassVar[tuple[str, ...]] = (
        "id",
        "action",
        "optional",
        "timeout_s",
        "retries",
        "description",
        "continue_on_error",
        "checkpoint",
        "side_effect",
        "postcondition",
        "on_unknown",
    )

    id: StepId | None = None
    action: str
    optional: bool = False
    timeout_s: StepSeconds | None = None
    retries: Retries | None = None
    description: str | None = None
    #: Record the failure and go on with the next step instead of failing the run.
    continue_on_error: bool = False
    #: Save a checkpoint after this step: a resumed run continues from here.
    checkpoint: bool = False
    #: This step changes the world (submit, pay, send): never re-executed blindly.
    side_effect: bool = False
    postcondition: Postcondition | None = None
    #: What to do when a side effect's outcome is unknown and its postcondition does not hold:
    #: ``needs_review`` (default) stops the run for a person; ``retry`` says it is safe to repeat.
    on_unknown: Literal["needs_review", "retry"] = "needs_review"

    @model_validator(mode="after")
    def _side_effect_fields(self) -> ActionStep:
        if not self.side_effect and (self.postcondition is not None or self.on_unknown != "needs_review"):
            raise ValueError("postcondition and on_unknown only apply to steps with side_effect: true")
        return self

    @classmethod
    def own_fields(cls) -> list[str]:
        """The action-specific fields (for messages listing what is allowed)."""
        return [name for name in cls.model_fields if name not in cls.COMMON_FIELDS]


class NavigateStep(ActionStep):
    action: Literal["navigate"] = "navigate"
    url: str
    wait_until: Literal["load", "domcontentloaded", "networkidle", "commit"] = "load"
    #: Store ``{"status": HTTP status, "url": the URL after redirects}`` in ``outputs[into]``.
    into: OutputName | None = None


class ClickStep(ActionStep):
    action: Literal["click"] = "click"
    selector: Selector
    button: Literal["left", "right", "middle"] = "left"
    click_count: Annotated[int, Field(ge=1, le=MAX_CLICK_COUNT)] = 1


class FillStep(ActionStep):
    action: Literal["fill"] = "fill"
    selector: Selector
    value: Text


class TypeStep(ActionStep):
    action: Literal["type"] = "type"
    selector: Selector
    text: Text
    delay_ms: Annotated[int, Field(ge=0, le=MAX_KEY_DELAY_MS)] = 0


class SelectStep(ActionStep):
    action: Literal["select"] = "select"
    selector: Selector
    value: Annotated[str | list[str], BeforeValidator(text_or_texts)]
    by: Literal["value", "label"] = "value"
    #: Store the list of option values now selected in ``outputs[into]``.
    into: OutputName | None = None


class CheckStep(ActionStep):
    action: Literal["check"] = "check"
    selector: Selector


class UncheckStep(ActionStep):
    action: Literal["uncheck"] = "uncheck"
    selector: Selector


class PressStep(ActionStep):
    action: Literal["press"] = "press"
    key: Annotated[Text, Field(min_length=1)]
    selector: Selector | None = None


class HoverStep(ActionStep):
    action: Literal["hover"] = "hover"
    selector: Selector


class ScrollStep(ActionStep):
    """Scroll by pixels, to an element or to top/bottom; ``settle_ms`` lets lazy content load."""

    action: Literal["scroll"] = "scroll"
    pixels: Annotated[int, Field(ge=-MAX_SCROLL_PIXELS, le=MAX_SCROLL_PIXELS)] | None = None
    selector: Selector | None = None
    #: Store ``{"height": page height, "grew": whether it grew}`` in ``outputs[into]``.
    into: OutputName | None = None
    to: Literal["bottom", "top"] | None = None
    settle_ms: Annotated[int, Field(ge=0, le=MAX_SETTLE_MS)] = 500

    @model_validator(mode="after")
    def _one_target(self) -> ScrollStep:
        exactly_one(self, ("pixels", "selector", "to"), "scroll")
        return self


class WaitStep(ActionStep):
    """Wait for an element state, a URL (glob, or regex after ``re:``), a load state or a time."""

    action: Literal["wait"] = "wait"
    selector: Selector | None = None
    state: Literal["attached", "detached", "visible", "hidden"] = "visible"
    url: str | None = None
    load_state: Literal["load", "domcontentloaded", "networkidle"] | None = None
    ms: Annotated[int, Field(ge=0, le=MAX_WAIT_MS)] | None = None

    @model_validator(mode="after")
    def _one_condition(self) -> WaitStep:
        exactly_one(self, ("selector", "url", "load_state", "ms"), "wait")
        # judged by value, not by fields_set: a model_dump() round trip includes the default
        if self.state != "visible" and self.selector is None:
            raise ValueError("wait: state only applies together with selector")
        return self


class FieldSpec(StrictModel):
    """One extracted field. ``selector`` None means the matched element itself."""

    selector: Selector | None = None
    attr: str | None = None
    html: bool = False
    all: bool = False

    @model_validator(mode="after")
    def _attr_or_html(self) -> FieldSpec:
        if self.attr is not None and self.html:
            raise ValueError("a field takes either attr or html, not both")
        return self


class ExtractStep(ActionStep):
    """Collect one record per element matching ``selector`` into ``outputs[into]``.

    Without ``fields`` each record is the element's text. A bare string field is a sub-selector
    whose text is taken; it is stored as ``FieldSpec(selector=...)``.
    """

    action: Literal["extract"] = "extract"
    selector: Selector
    fields: Annotated[dict[str, FieldSpec], Field(min_length=1)] | None = None
    into: OutputName
    limit: Annotated[int, Field(ge=1, le=MAX_EXTRACT_LIMIT)] | None = None
    allow_empty: bool = False

    @field_validator("fields", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: {"selector": v} if isinstance(v, str) else v for k, v in value.items()}
        return value


_GET_NEEDS_SELECTOR = ("text", "attribute", "count", "html", "value")


class GetStep(ActionStep):
    """Read one value from the page into ``outputs[into]``; ``what`` defaults to the text."""

    action: Literal["get"] = "get"
    what: Literal["text", "attribute", "url", "title", "count", "html", "value"] = "text"
    selector: Selector | None = None
    attribute: str | None = None
    into: OutputName

    @model_validator(mode="after")
    def _arguments(self) -> GetStep:
        if self.what in _GET_NEEDS_SELECTOR and self.selector is None:
            default = " (what defaults to text)" if "what" not in self.model_fields_set else ""
            raise ValueError(f"get: what: {self.what} needs a selector{default}")
        if self.what not in _GET_NEEDS_SELECTOR and self.selector is not None:
            raise ValueError(f"get: what: {self.what} takes no selector")
        if self.what == "attribute" and not self.attribute:
            raise ValueError("get: what: attribute needs an attribute name")
        if self.what != "attribute" and self.attribute is not None:
            raise ValueError("get: attribute only applies with what: attribute")
        return self


class EvalStep(ActionStep):
    """Run JavaScript in the page; only allowed when ``settings.allow_eval`` is true."""

    action: Literal["eval"] = "eval"
    expression: Annotated[str, Field(min_length=1)]
    into: OutputName | None = None


class ScreenshotStep(ActionStep):
    """``name`` is relative to the run's artifact folder; default: derived from the step."""

    action: Literal["screenshot"] = "screenshot"
    name: str | None = None
    full_page: bool = False
    selector: Selector | None = None
    #: Store ``{"artifact": path inside the artifacts dir, "size": bytes}`` in ``outputs[into]``.
    into: OutputName | None = None

    @model_validator(mode="after")
    def _page_or_element(self) -> ScreenshotStep:
        if self.full_page and self.selector is not None:
            raise ValueError("screenshot: full_page cannot be combined with selector")
        return self


class AssertStep(ActionStep):
    """Fail the run unless an element exists (or not), a text is present, or the URL matches."""

    action: Literal["assert"] = "assert"
    selector: Selector | None = None
    exists: bool = True
    text: Text | None = None
    within: Selector | None = None
    url: str | None = None
    message: str | None = None

    @model_validator(mode="after")
    def _one_condition(self) -> AssertStep:
        exactly_one(self, ("selector", "text", "url"), "assert")
        if self.exists is not True and self.selector is None:
            raise ValueError("assert: exists only applies together with selector")
        if self.within is not None and self.text is None:
            raise ValueError("assert: within only applies together with text")
        return self


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
    """Runs ``repeat.steps`` up to ``repeat.max`` times."""

    id: StepId | None = None
    description: str | None = None
    repeat: RepeatSpec


ACTION_CLASSES: tuple[type[ActionStep], ...] = (
    NavigateStep,
    ClickStep,
    FillStep,
    TypeStep,
    SelectStep,
    CheckStep,
    UncheckStep,
    PressStep,
    HoverStep,
    ScrollStep,
    WaitStep,
    ExtractStep,
    GetStep,
    EvalStep,
    ScreenshotStep,
    AssertStep,
)
#: Action name → step class.
ACTIONS: dict[str, type[ActionStep]] = {
    cls.model_fields["action"].default: cls for cls in ACTION_CLASSES
}

ACTION_REPEAT = "action: repeat"


def step_tag(value: Any) -> str | None:
    """Which union member a step entry is: ``repeat`` if it has that key, else its action."""
    if isinstance(value, dict):
        if "repeat" in value:
            return "repeat"
        action = value.get("action")
        if action == "repeat":
            return ACTION_REPEAT  # not a member tag: a repeat is written ``- repeat: {...}``
        return action if isinstance(action, str) else None
    if isinstance(value, RepeatStep):
        return "repeat"
    if isinstance(value, ActionStep):
        return value.action
    return None


Step = Annotated[
    Union[  # noqa: UP007 - tagged members read better as a Union
        Annotated[NavigateStep, Tag("navigate")],
        Annotated[ClickStep, Tag("click")],
        Annotated[FillStep, Tag("fill")],
        Annotated[TypeStep, Tag("type")],
        Annotated[SelectStep, Tag("select")],
        Annotated[CheckStep, Tag("check")],
        Annotated[UncheckStep, Tag("uncheck")],
        Annotated[PressStep, Tag("press")],
        Annotated[HoverStep, Tag("hover")],
        Annotated[ScrollStep, Tag("scroll")],
        Annotated[WaitStep, Tag("wait")],
        Annotated[ExtractStep, Tag("extract")],
        Annotated[GetStep, Tag("get")],
        Annotated[EvalStep, Tag("eval")],
        Annotated[ScreenshotStep, Tag("screenshot")],
        Annotated[AssertStep, Tag("assert")],
        Annotated[RepeatStep, Tag("repeat")],
    ],
    Discriminator(step_tag),
]
STEP_TAGS = frozenset(ACTIONS) | {"repeat"}

RepeatSpec.model_rebuild()
RepeatStep.model_rebuild()


def iter_steps(steps: Sequence[ActionStep | RepeatStep]) -> Iterator[ActionStep | RepeatStep]:
    """Every step in document order, descending into repeats (the repeat comes first)."""
    for step in steps:
        yield step
        if isinstance(step, RepeatStep):
            yield from iter_steps(step.repeat.steps)
