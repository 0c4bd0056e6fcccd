"""Numeric step fields take ``${param}`` and are checked after interpolation (issue 22, item 21):
``click_count``, ``delay_ms``, ``pixels``, ``settle_ms``, ``ms``, ``limit`` and a step's
``timeout_s`` load with a reference, render to the number, and a rendered value that is not a
number in range fails the step naming the field, the reference and the value's type."""

from __future__ import annotations

import pytest

from browserq.errors import ParamError, StepFailed, TemplateInvalid
from browserq.execute.runtime import Runtime
from browserq.templates import render_step
from tests.conftest import template
from tests.support.http import html_pages, serve_http

STEPS = """
params:
  n: {type: int, default: 2}
steps:
  - {action: click, selector: "#a", click_count: "${n}", timeout_s: "${n}"}
  - {action: type, selector: "#a", text: x, delay_ms: "${n}"}
  - {action: scroll, pixels: "${n}"}
  - {action: scroll, to: bottom, settle_ms: "${n}"}
  - {action: wait, ms: "${n}"}
  - {action: extract, selector: a, into: x, limit: "${n}"}
"""
FIELDS = ["click_count", "delay_ms", "pixels", "settle_ms", "ms", "limit"]


def test_a_reference_loads_and_renders_to_the_number() -> None:
    steps = template(STEPS).template.steps
    assert [getattr(s, f) for s, f in zip(steps, FIELDS, strict=True)] == ["${n}"] * 6
    rendered = [render_step(s, {"n": 3}) for s in steps]
    assert [getattr(s, f) for s, f in zip(rendered, FIELDS, strict=True)] == [3] * 6
    assert rendered[0].timeout_s == 3.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            10**9,
            "click_count: ${n} gave the integer 1000000000, but click_count must be at most 10",
        ),
        (0, "click_count: ${n} gave the integer 0, but click_count must be at least 1"),
        ("s3cret-text", "click_count: ${n} gave a string, but click_count must be an integer"),
        (2.5, "click_count: ${n} gave the number 2.5, but click_count must be an integer"),
        ([1], "click_count: ${n} gave a list, but click_count must be an integer"),
    ],
)
def test_a_rendered_value_out_of_range_or_not_a_number_names_field_reference_and_type(
    value, expected
) -> None:
    click = template(STEPS).template.steps[0]
    with pytest.raises(StepFailed) as caught:
        render_step(click, {"n": value})
    assert caught.value.code.code == "INVALID_STEP_INPUT"
    assert expected in caught.value.message and "s3cret" not in caught.value.message


def test_timeout_s_after_interpolation_keeps_its_bound() -> None:
    click = template(STEPS).template.steps[0]
    with pytest.raises(
        StepFailed,
        match="timeout_s: \\$\\{n\\} gave the integer 700, but timeout_s must be at most 600",
    ):
        render_step(click, {"n": 700})


def test_literal_numbers_are_checked_at_load_as_before() -> None:
    with pytest.raises(
        TemplateInvalid, match=r"line 6: steps\[0\]\.click_count: must be at most 10, got 99"
    ):
        template(STEPS.replace('click_count: "${n}"', "click_count: 99"))
    with pytest.raises(
        TemplateInvalid, match=r"steps\[0\]\.click_count: expected an integer, got a string 'many'"
    ):
        template(STEPS.replace('click_count: "${n}"', "click_count: many"))


PAGE = """<title>counter</title><div style="height: 3000px"><button id=b
  onclick="this.dataset.n = (+this.dataset.n || 0) + 1">count</button></div>"""
RUN = """
params:
  clicks: {{type: int}}
  pause: {{type: int, default: 10}}
settings: {{trace: off, allow_eval: true, step_retries: 0, run_retries: 0}}
steps:
  - {{action: navigate, url: "http://{host}/"}}
  - {{action: click, selector: "#b", click_count: "${{clicks}}", timeout_s: "${{pause}}"}}
  - {{action: scroll, pixels: "${{pause}}"}}
  - {{action: wait, ms: "${{pause}}"}}
  - {{action: eval, expression: "document.querySelector('#b').dataset.n + '@' + window.scrollY", into: seen}}
"""


def test_a_run_uses_interpolated_numbers_and_fails_on_one_out_of_range(
    sqlite_runtime: Runtime,
) -> None:
    with serve_http(html_pages({"/": PAGE})) as host:
        loaded = template(RUN.format(host=host))
        done = sqlite_runtime.run_loaded(loaded, {"clicks": 3})
        assert done.status == "completed", done
        assert done.outputs["seen"] == "3@10"
        # From params alone: refused by the producer, before anything runs.
        with pytest.raises(ParamError) as refused:
            sqlite_runtime.run_loaded(loaded, {"clicks": 11})
        assert (
            "step #1 (click) click_count: ${clicks} gave the integer 11, but click_count must be at most 10"
            in str(refused.value)
        )
        # From what the run read: the step fails when it renders.
        late = template(
            RUN.format(host=host)
            .replace('"${clicks}"', '"${outputs.clicks}"')
            .replace(
                "  - {action: click",
                '  - {action: eval, expression: "11", into: clicks}\n  - {action: click',
                1,
            )
        )
        bad = sqlite_runtime.run_loaded(late, {"clicks": 1})
    assert (bad.status, bad.error_code, bad.error_step_path) == (
        "failed",
        "INVALID_STEP_INPUT",
        "2",
    ), bad
    message = (
        "click_count: ${outputs.clicks} gave the integer 11, but click_count must be at most 10"
    )
    assert message in bad.error_message


@pytest.mark.parametrize("field", FIELDS)
def test_a_reference_that_renders_to_another_reference_is_a_string_not_a_number(field: str) -> None:
    """A value is rendered once: a param whose text is ``${secret_b}`` stays text, and a numeric
    field refuses it as INVALID_STEP_INPUT (it was a TypeError), naming field and reference only."""
    step = next(s for s, f in zip(template(STEPS).template.steps, FIELDS, strict=True) if f == field)
    with pytest.raises(StepFailed) as caught:
        render_step(step, {"n": "${secret_b}"})
    assert caught.value.code.code == "INVALID_STEP_INPUT"
    assert f"{field}: ${{n}} gave a string, but {field} must be a number" in caught.value.message
    assert "secret_b" not in caught.value.message
