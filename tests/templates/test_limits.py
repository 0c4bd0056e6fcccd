"""Every number a template hands the browser is bounded, at load time and after interpolation."""

from __future__ import annotations

import typing

import annotated_types
import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from browserq.errors import StepFailed, TemplateInvalid
from browserq.templates import (
    ClickStep,
    blocks,
    conditions,
    fields,
    model,
    render_step,
    settings_model,
    steps,
)
from tests.conftest import template

#: The modules the schema is split into.
SCHEMA = (fields, steps, blocks, conditions, settings_model, model)
#: Numbers that bound params (not resources) and repeat.max (checked against max_repeat).
NOT_RESOURCES = {("ParamSpec", "min"), ("ParamSpec", "max"), ("RepeatSpec", "max")}

TOO_BIG = [
    ("click", "{action: click, selector: a, click_count: 1000000000}", "click_count", "at most 10"),
    ("type", "{action: type, selector: a, text: x, delay_ms: 100000000}", "delay_ms", "at most 5000"),
    ("scroll", "{action: scroll, pixels: 99999999999999999999}", "pixels", "at most 1000000"),
    ("scroll down", "{action: scroll, pixels: -99999999999999999999}", "pixels", "at least -1000000"),
    ("settle", "{action: scroll, to: bottom, settle_ms: 10000000}", "settle_ms", "at most 60000"),
    ("wait", "{action: wait, ms: 100000000}", "ms", "at most 600000"),
    ("limit", "{action: extract, selector: a, into: x, limit: 100000000}", "limit", "at most 100000"),
    ("step timeout", "{action: hover, selector: a, timeout_s: 100000.0}", "timeout_s", "at most 600"),
    ("retries", "{action: hover, selector: a, retries: 1000}", "retries", "at most 10"),
]


def _numeric(annotation: typing.Any) -> bool:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        return _numeric(args[0])
    if args:
        return any(_numeric(a) for a in args)
    return annotation in (int, float)


def _upper_bound(field: typing.Any) -> bool:
    def bounded(metadata: list[typing.Any]) -> bool:
        return any(
            isinstance(m, annotated_types.Le | annotated_types.Lt)
            or (isinstance(m, FieldInfo) and bounded(m.metadata))
            for m in metadata
        )

    if bounded(field.metadata):
        return True
    stack = [field.annotation]
    while stack:
        annotation = stack.pop()
        if typing.get_origin(annotation) is typing.Annotated and bounded(list(annotation.__metadata__)):
            return True
        stack.extend(typing.get_args(annotation))
    return False


def test_every_numeric_field_of_the_schema_has_an_upper_bound() -> None:
    models = [
        value for schema in SCHEMA for value in vars(schema).values()
        if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == schema.__name__
    ]
    names = {m.__name__ for m in models}
    assert {"Template", "ParamSpec", "TemplateSettings", "ClickStep", "RepeatSpec"} <= names, names
    unbounded = [
        f"{model.__name__}.{name}"
        for model in models
        for name, field in model.model_fields.items()
        if (model.__name__, name) not in NOT_RESOURCES and _numeric(field.annotation) and not _upper_bound(field)
    ]
    assert not unbounded, unbounded


@pytest.mark.parametrize(("label", "step", "field", "expected"), TOO_BIG, ids=[t[0] for t in TOO_BIG])
def test_an_out_of_range_number_is_a_line_numbered_error(label: str, step: str, field: str, expected: str) -> None:
    body = f'steps:\n  - {{action: navigate, url: "http://127.0.0.1/"}}\n  - {step}\n'
    with pytest.raises(TemplateInvalid) as caught:
        template(body)
    message = str(caught.value)
    assert f"line 5: steps[1].{field}: must be {expected}" in message, message


@pytest.mark.parametrize(
    ("setting", "expected"),
    [("timeout_s: .inf", "at most 14400"), ("step_timeout_s: 100000", "at most 600"),
     ("step_retries: 99", "at most 10"), ("run_retries: 99", "at most 10")],
)
def test_out_of_range_settings_are_refused(setting: str, expected: str) -> None:
    with pytest.raises(TemplateInvalid) as caught:
        template(f'settings: {{{setting}}}\nsteps:\n  - {{action: navigate, url: "http://127.0.0.1/"}}\n')
    assert f"line 3: settings.{setting.split(':')[0]}: must be {expected}" in str(caught.value)


def test_numbers_are_checked_again_after_interpolation() -> None:
    """The runner re-validates every rendered step through the same schema."""
    step = ClickStep.model_construct(action="click", selector="a", click_count=10**9)
    with pytest.raises(StepFailed) as caught:
        render_step(step, {})
    assert caught.value.code.code == "INVALID_STEP_INPUT" and "click_count" in caught.value.message

