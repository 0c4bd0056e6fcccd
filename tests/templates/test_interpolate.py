"""render / references: type preservation, nested paths, escapes, unresolvable references."""

from __future__ import annotations

import pytest

from browserq.errors import Codes, StepFailed
from browserq.templates import has_references, make_scope, references, render

SCOPE = make_scope(
    {"n": 3, "ratio": 0.5, "flag": True, "name": "ada", "tags": ["a", "b"], "empty": None},
    {"quotes": [{"text": "hi", "tags": ["x"]}, {"text": "yo"}], "meta": {"count": 2}},
    run_id="run-42",
    loop_index=4,
)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("${n}", 3),
        ("${ratio}", 0.5),
        ("${flag}", True),
        ("${tags}", ["a", "b"]),
        ("${outputs.meta}", {"count": 2}),
        ("${empty}", None),
        ("${ n }", 3),
    ],
)
def test_whole_reference_keeps_type(template, expected) -> None:
    value = render(template, SCOPE)
    assert value == expected and type(value) is type(expected)


def test_nested_paths_walk_dicts_and_lists() -> None:
    assert render("${outputs.quotes.0.text}", SCOPE) == "hi"
    assert render("${outputs.quotes.1.text}", SCOPE) == "yo"
    assert render("${outputs.quotes.0.tags.0}", SCOPE) == "x"
    assert render("${outputs.quotes.-1.text}", SCOPE) == "yo"
    assert render("${tags.1}", SCOPE) == "b"


def test_loop_and_run() -> None:
    assert render("${loop.index}/${loop.iteration}", SCOPE) == "4/5"
    assert render("${loop.iteration}", SCOPE) == 5
    assert render("${run.id}", SCOPE) == "run-42"
    assert "loop" not in make_scope({}, None)


def test_references_inside_strings_are_formatted() -> None:
    assert render("page ${n} of ${name}", SCOPE) == "page 3 of ada"
    assert render("tags=${tags}", SCOPE) == 'tags=["a", "b"]'
    assert render("m=${outputs.meta}", SCOPE) == 'm={"count": 2}'
    assert render("f=${flag} e=[${empty}]", SCOPE) == "f=true e=[]"
    assert render(" ${n}", SCOPE) == " 3"  # not exactly one reference: a string


def test_escapes() -> None:
    assert render("$${n}", SCOPE) == "${n}"
    assert render("cost: $${n} = ${n}", SCOPE) == "cost: ${n} = 3"
    assert render("$5 and $ {n}", SCOPE) == "$5 and $ {n}"
    assert references("$${n} ${name}") == {"name"}
    assert not has_references("$${n}") and has_references(["x", {"k": "${a}"}])


def test_render_walks_containers_but_not_keys() -> None:
    value = {"${n}": ["${n}", {"deep": "x${name}"}], "keep": 7, "none": None}
    assert render(value, SCOPE) == {"${n}": [3, {"deep": "xada"}], "keep": 7, "none": None}


@pytest.mark.parametrize(
    ("template", "detail"),
    [
        ("${missing}", "cannot resolve ${missing}: 'missing' is not defined"),
        (
            "go ${outputs.nothing}",
            "cannot resolve ${outputs.nothing}: 'outputs' has no key 'nothing'",
        ),
        ("${outputs.quotes.5.text}", "index 5 is out of range ('outputs.quotes' has 2)"),
        ("${outputs.quotes.first}", "'outputs.quotes' is a list; 'first' is not an index"),
        ("${n.x}", "'n' is a int, it has no 'x'"),
        ("${bad name}", "'${bad name}' is not a valid reference"),
        ("${open", "without a closing"),
    ],
)
def test_unresolvable_raises_invalid_step_input(template, detail) -> None:
    with pytest.raises(StepFailed) as info:
        render({"field": [template]}, SCOPE)
    assert info.value.code is Codes.INVALID_STEP_INPUT
    assert detail in info.value.message


def test_references_collects_dotted_names() -> None:
    value = {
        "a": "${start_url}/p/${outputs.q.0.text}",
        "b": ["${loop.index}", 5, None],
        "c": "${run.id}",
    }
    assert references(value) == {"start_url", "outputs.q.0.text", "loop.index", "run.id"}
    assert references("${broken") == set()
    assert references(42) == set()


def test_render_step_renders_fields_and_revalidates() -> None:
    from browserq.templates import ExtractStep, FillStep, WaitStep, render_step

    fill = FillStep.model_validate(
        {"action": "fill", "id": "first", "selector": "#${name}", "value": "${n}"}
    )
    done = render_step(fill, SCOPE)
    assert isinstance(done, FillStep)
    assert (done.id, done.selector, done.value) == ("first", "#ada", "3")
    extract = ExtractStep.model_validate(
        {"action": "extract", "selector": ".q", "into": "rows", "fields": {"t": "${name} b"}}
    )
    assert render_step(extract, SCOPE).fields["t"].selector == "ada b"
    wait = WaitStep.model_validate({"action": "wait", "url": "**/${run.id}"})
    assert render_step(wait, SCOPE).url == "**/run-42"
    empty = FillStep.model_validate({"action": "fill", "selector": "${empty}", "value": "x"})
    with pytest.raises(StepFailed) as info:
        render_step(empty, SCOPE)
    assert info.value.code is Codes.INVALID_STEP_INPUT
    assert "selector" in info.value.message
