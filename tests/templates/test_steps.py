"""Step models: the tagged union, one-step rules, and walking nested steps."""

from __future__ import annotations

import pydantic
import pytest

from browserq.templates.steps import (
    ACTION_CLASSES,
    ACTION_REPEAT,
    ACTIONS,
    STEP_TAGS,
    ExtractStep,
    FieldSpec,
    GetStep,
    RepeatStep,
    ScrollStep,
    WaitStep,
    iter_steps,
    step_tag,
)


def test_every_action_class_is_a_tag_of_the_union() -> None:
    assert set(ACTIONS) == {cls.model_fields["action"].default for cls in ACTION_CLASSES}
    assert set(ACTIONS) | {"repeat", "block"} == STEP_TAGS and len(ACTIONS) == len(ACTION_CLASSES)


def test_step_tag() -> None:
    assert step_tag({"repeat": {}}) == "repeat"
    assert step_tag({"action": "click"}) == "click"
    assert step_tag({"action": "repeat"}) == ACTION_REPEAT  # a repeat is written `- repeat: {...}`
    assert step_tag({"action": 3}) is None and step_tag("click") is None


def test_one_step_rules() -> None:
    with pytest.raises(pydantic.ValidationError, match="scroll needs exactly one of pixels, selector, to"):
        ScrollStep(pixels=10, to="bottom")
    with pytest.raises(pydantic.ValidationError, match="wait: state only applies together with selector"):
        WaitStep(ms=10, state="hidden")
    with pytest.raises(pydantic.ValidationError, match=r"get: what: text needs a selector \(what defaults to text\)"):
        GetStep(into="x")
    with pytest.raises(pydantic.ValidationError, match="only apply to steps with side_effect: true"):
        GetStep(what="url", into="x", on_unknown="retry")
    assert GetStep(what="url", into="x").selector is None


def test_extract_fields_shorthand_is_a_sub_selector() -> None:
    step = ExtractStep(selector=".quote", into="quotes", fields={"text": ".text", "link": {"selector": "a", "attr": "href"}})
    assert step.fields == {"text": FieldSpec(selector=".text"), "link": FieldSpec(selector="a", attr="href")}


def test_iter_steps_descends_into_repeats_in_document_order() -> None:
    outer = RepeatStep.model_validate({"id": "outer", "repeat": {"max": 2, "steps": [
        {"action": "click", "selector": "a", "id": "first"},
        {"id": "inner", "repeat": {"max": 3, "steps": [{"action": "hover", "selector": "b", "id": "deep"}]}},
    ]}})
    last = ScrollStep(to="bottom", id="last")
    assert [s.id for s in iter_steps([outer, last])] == ["outer", "first", "inner", "deep", "last"]
