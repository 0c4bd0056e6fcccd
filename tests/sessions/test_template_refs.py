"""A ref means something only in the live session whose snapshot issued it: a template that aims a
step at one is refused when it loads, saying what to write instead."""

from __future__ import annotations

import pytest

from browserq.errors import TemplateInvalid
from browserq.templates import load_template_text

HEAD = "name: refs\nversion: 1.0.0\nsteps:\n"


@pytest.mark.parametrize("step", [
    "  - {action: click, ref: e3.12}",
    '  - {action: click, selector: "ref=e3.12"}',
    '  - {action: fill, selector: "aria-ref=e5", value: x}',
    '  - {action: click, selector: "iframe >>> aria-ref=f1e2"}',
    "  - {action: click, selector: {ref: e3.12}}",
    '  - {action: extract, selector: ".row", into: rows, fields: {name: "aria-ref=e2"}}',
])
def test_a_template_aiming_at_a_ref_is_refused_at_load(step: str) -> None:
    with pytest.raises(TemplateInvalid) as refused:
        load_template_text(HEAD + step + "\n", source="refs.yml")
    message = str(refused.value)
    assert "only means something in the live session" in message, message
    assert "line 4" in message and "{role: button, name: Send}" in message


def test_selectors_that_only_look_alike_still_load() -> None:
    loaded = load_template_text(HEAD + '  - {action: click, selector: "[data-ref=e1]"}\n'
                                '  - {action: click, selector: {role: button, name: "ref=e1"}}\n', source="ok.yml")
    assert len(loaded.template.steps) == 2
