"""Pydantic's errors rewritten for template authors: words, suggestions, and the model at a place."""

from __future__ import annotations

from browserq.templates.messages import describe, did_you_mean, model_at, value_at
from browserq.templates.model import ParamSpec, Template
from browserq.templates.settings_model import TemplateSettings
from browserq.templates.steps import ClickStep, FieldSpec, RepeatSpec, RepeatStep


def test_did_you_mean_only_when_something_is_close() -> None:
    assert did_you_mean("clik", ["click", "fill"]) == " (did you mean 'click'?)"
    assert did_you_mean("zzz", ["click", "fill"]) == ""


def test_values_are_named_as_an_author_would() -> None:
    assert [describe(v) for v in (None, True, 3, "abc", [], {}, 1.5)] == [
        "nothing (null)", "a boolean true", "a number 3", "a string 'abc'", "a list", "a mapping", "a number 1.5",
    ]


def test_the_model_that_validates_each_place() -> None:
    data = {"steps": [{"action": "click"}, {"repeat": {"steps": [{"action": "extract", "fields": {"x": {}}}]}}]}
    assert value_at(data, ("steps", 1, "repeat", "steps", 0, "action")) == "extract"
    assert value_at(data, ("steps", 5)) is None
    assert model_at((), data) is Template and model_at(("settings",), data) is TemplateSettings
    assert model_at(("params", "start_url"), data) is ParamSpec
    assert model_at(("steps", 0), data) is ClickStep and model_at(("steps", 1), data) is RepeatStep
    assert model_at(("steps", 1, "repeat"), data) is RepeatSpec
    assert model_at(("steps", 1, "repeat", "steps", 0, "fields", "x"), data) is FieldSpec
