"""The steps of a template: one pydantic model per action, repeats, and the tagged ``Step`` union.

Rules that only involve one step (``exactly one of pixels/selector/to``) live here; rules that
need the whole template (references, duplicate ids, domains, limits) live in
:mod:`browserq.templates.checks`, run by the loader on the raw YAML to report every problem at once.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BeforeValidator, Discriminator, Field, Tag, field_validator, model_validator

from browserq.templates.blocks import BlockStep, RepeatSpec, RepeatStep, children  # noqa: F401
from browserq.templates.blocks import iter_steps as iter_steps
from browserq.templates.fields import (
    MAX_CLICK_COUNT,
    MAX_EXTRACT_LIMIT,
    MAX_KEY_DELAY_MS,
    MAX_SCROLL_PIXELS,
    MAX_SETTLE_MS,
    MAX_WAIT_MS,
    Interpolable,
    OutputName,
    Selector,
    StrictModel,
    Text,
    exactly_one,
    text_or_texts,
)
from browserq.templates.file_steps import FILE_STEP_CLASSES, DownloadStep, UploadStep
from browserq.templates.handoff import HandoffStep
from browserq.templates.step_base import ActionStep, DialogAnswer, Postcondition  # noqa: F401 (re-exported)
from browserq.templates.tab_steps import (
    TAB_STEP_CLASSES,
    CloseTabStep,
    ListTabsStep,
    NewTabStep,
    SwitchTabStep,
)


class NavigateStep(ActionStep):
    action: Literal["navigate"] = "navigate"
    url: str
    wait_until: Literal["load", "domcontentloaded", "networkidle", "commit"] = "load"
    #: Store ``{"status": HTTP status, "url": the URL after redirects}`` in ``outputs[into]``.
    into: OutputName | None = None


class GoBackStep(ActionStep):
    """Go back one page in the current tab's history, as the browser's Back button does."""

    action: Literal["go_back"] = "go_back"
    wait_until: Literal["load", "domcontentloaded", "networkidle", "commit"] = "load"
    #: Store ``{"status": HTTP status or None, "url": the URL now shown}`` in ``outputs[into]``.
    into: OutputName | None = None


class ClickStep(ActionStep):
    action: Literal["click"] = "click"
    selector: Selector
    button: Literal["left", "right", "middle"] = "left"
    click_count: Interpolable[Annotated[int, Field(ge=1, le=MAX_CLICK_COUNT)]] = 1
    #: ``tab``: the click opens a page (popup, ``target=_blank``); wait for it, go on there.
    opens: Literal["tab"] | None = None


class FillStep(ActionStep):
    action: Literal["fill"] = "fill"
    selector: Selector
    value: Text


class TypeStep(ActionStep):
    action: Literal["type"] = "type"
    selector: Selector
    text: Text
    delay_ms: Interpolable[Annotated[int, Field(ge=0, le=MAX_KEY_DELAY_MS)]] = 0


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
    #: ``tab``: the key press opens a page (a form with ``target=_blank``); go on there.
    opens: Literal["tab"] | None = None


class HoverStep(ActionStep):
    action: Literal["hover"] = "hover"
    selector: Selector


class ScrollStep(ActionStep):
    """Scroll by pixels, to an element or to top/bottom; ``settle_ms`` lets lazy content load."""

    action: Literal["scroll"] = "scroll"
    pixels: (
        Interpolable[Annotated[int, Field(ge=-MAX_SCROLL_PIXELS, le=MAX_SCROLL_PIXELS)]] | None
    ) = None
    selector: Selector | None = None
    #: Store ``{"height": page height, "grew": whether it grew}`` in ``outputs[into]``.
    into: OutputName | None = None
    to: Literal["bottom", "top"] | None = None
    settle_ms: Interpolable[Annotated[int, Field(ge=0, le=MAX_SETTLE_MS)]] = 500

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
    ms: Interpolable[Annotated[int, Field(ge=0, le=MAX_WAIT_MS)]] | None = None

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
    limit: Interpolable[Annotated[int, Field(ge=1, le=MAX_EXTRACT_LIMIT)]] | None = None
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


ACTION_CLASSES: tuple[type[ActionStep], ...] = (
    NavigateStep,
    GoBackStep,
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
    *TAB_STEP_CLASSES,
    *FILE_STEP_CLASSES,
    HandoffStep,
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
        if "steps" in value:
            return "block"
        action = value.get("action")
        if action == "repeat":
            return ACTION_REPEAT  # not a member tag: a repeat is written ``- repeat: {...}``
        return action if isinstance(action, str) else None
    if isinstance(value, RepeatStep | BlockStep):
        return "repeat" if isinstance(value, RepeatStep) else "block"
    if isinstance(value, ActionStep):
        return value.action
    return None


Step = Annotated[
    Union[  # noqa: UP007 - tagged members read better as a Union
        Annotated[NavigateStep, Tag("navigate")],
        Annotated[GoBackStep, Tag("go_back")],
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
        Annotated[SwitchTabStep, Tag("switch_tab")],
        Annotated[CloseTabStep, Tag("close_tab")],
        Annotated[ListTabsStep, Tag("list_tabs")],
        Annotated[NewTabStep, Tag("new_tab")],
        Annotated[DownloadStep, Tag("download")],
        Annotated[UploadStep, Tag("upload")],
        Annotated[HandoffStep, Tag("handoff")],
        Annotated[RepeatStep, Tag("repeat")],
        Annotated[BlockStep, Tag("block")],
    ],
    Discriminator(step_tag),
]
STEP_TAGS = frozenset(ACTIONS) | {"repeat", "block"}

RepeatSpec.model_rebuild()
RepeatStep.model_rebuild()
BlockStep.model_rebuild()
