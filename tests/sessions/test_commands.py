"""A command becomes the step a template would hold, validated by the same models; what cannot be
a step is refused with a code before anything runs."""

from __future__ import annotations

import pytest

from browserq.errors import Codes, StepFailed
from browserq.sessions import command_step
from browserq.templates import ClickStep, FillStep


def test_a_ref_travels_in_the_selector_and_the_rest_is_the_step_model() -> None:
    step = command_step("fill", ref="e2.5", value="ada")
    assert isinstance(step, FillStep) and (step.selector, step.value) == ("ref=e2.5", "ada")
    assert isinstance(command_step("click", selector={"role": "button", "name": "Send"}), ClickStep)


@pytest.mark.parametrize(("action", "fields", "code", "says"), [
    ("fly", {}, Codes.INVALID_STEP_INPUT, "unknown action 'fly'"),
    ("handoff", {}, Codes.INVALID_STEP_INPUT, "message"),  # a command now; the action's fields
    ("click", {"ref": "e1.1", "selector": "#a"}, Codes.INVALID_STEP_INPUT, "not both"),
    ("wait", {"ref": "e1.1"}, Codes.INVALID_STEP_INPUT, "takes a selector, not a ref"),
    ("click", {"selector": "aria-ref=e3"}, Codes.INVALID_STEP_INPUT, "as ref="),
    ("click", {"selector": "ref=e1.1"}, Codes.INVALID_STEP_INPUT, "as ref="),
    ("click", {"ref": "e1 .1; drop"}, Codes.REF_UNKNOWN, "never issued"),
    ("fill", {"ref": "e1.1"}, Codes.INVALID_STEP_INPUT, "value"),
    ("click", {"ref": "e1.1", "colour": "red"}, Codes.INVALID_STEP_INPUT, "colour"),
])
def test_what_is_no_step_is_refused_with_a_code(action: str, fields: dict, code: object, says: str) -> None:
    with pytest.raises(StepFailed) as refused:
        command_step(action, **fields)
    assert refused.value.code is code and says in refused.value.message, refused.value
