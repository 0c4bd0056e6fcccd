"""validate_params: coercion of every type, defaults, and every kind of error."""

from __future__ import annotations

import pytest

from browserq.errors import ParamError
from browserq.templates import Template, load_template_text, secret_names, validate_params

PARAMS = """\
name: params
version: 2.0.0
params:
  url: {type: url}
  n: {type: int, min: 1, max: 50}
  ratio: {type: float, min: 0, max: 1}
  flag: {type: bool}
  name: {type: string, pattern: "^[a-z0-9_]+$"}
  password: {type: secret, pattern: "^.{8,}$"}
  mode: {type: enum, choices: [fast, slow]}
  level: {type: enum, choices: [1, 2, 3]}
  mail: {type: email}
  tags: {type: list, items: string, max: 3}
  ids: {type: list, items: int, min: 1}
  anything: {type: list}
  pages: {type: int, default: 3}
  token: {type: string, required: true}
settings:
  allowed_domains: [quotes.example]
steps:
  - {action: check, selector: a}
"""


@pytest.fixture(scope="module")
def template() -> Template:
    return load_template_text(PARAMS).template


def ok(template: Template, **raw: object) -> dict[str, object]:
    return validate_params(template, {"token": "t", **raw})


def errors(template: Template, **raw: object) -> list[str]:
    with pytest.raises(ParamError) as info:
        validate_params(template, {"token": "t", **raw}, template_ref="params@2.0.0")
    assert info.value.template == "params@2.0.0"
    return info.value.problems


def test_defaults_and_absent_optionals(template) -> None:
    values = ok(template)
    assert values["pages"] == 3 and values["token"] == "t"
    assert values["url"] is None and values["tags"] is None
    assert set(values) == set(template.params)
    assert ok(template, pages=None)["pages"] == 3  # an explicit None means "not given"


def test_default_is_a_private_copy() -> None:
    t = load_template_text(
        "name: d\nversion: 1.0.0\nparams:\n  l: {type: list, default: [a]}\nsteps:\n"
        "  - {action: check, selector: a}\n"
    ).template
    first = validate_params(t, None)
    first["l"].append("b")
    assert validate_params(t, {})["l"] == ["a"]


def test_unknown_and_missing_are_reported_together(template) -> None:
    with pytest.raises(ParamError) as info:
        validate_params(template, {"nn": 1, "zz": 2})
    assert info.value.template == "params@2.0.0"
    accepted = ", ".join(sorted(template.params))
    assert info.value.problems == [
        f"unknown param 'nn'; accepted params: {accepted}",
        f"unknown param 'zz'; accepted params: {accepted}",
        "param 'token': missing required param (string)",
    ]
    assert "invalid params for template params@2.0.0" in str(info.value)


def test_template_without_params() -> None:
    t = load_template_text(
        "name: d\nversion: 1.0.0\nsteps:\n  - {action: check, selector: a}\n"
    ).template
    assert validate_params(t, None) == {}
    with pytest.raises(ParamError, match="accepted params: none"):
        validate_params(t, {"x": 1})


@pytest.mark.parametrize(("raw", "value"), [(3, 3), ("3", 3), (" 7 ", 7), (4.0, 4), ("-0", 0)])
def test_int_coercion(template, raw, value) -> None:
    if value < 1:
        assert errors(template, n=raw) == ["param 'n': 0 is below the minimum 1"]
    else:
        result = ok(template, n=raw)["n"]
        assert result == value and type(result) is int


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (True, "expected an integer, got a boolean True"),
        ("3.5", "expected an integer, got '3.5'"),
        (2.5, "expected an integer, got 2.5"),
        ("three", "expected an integer, got 'three'"),
        ([3], "expected an integer, got [3]"),
        (51, "51 is above the maximum 50"),
        ("0", "0 is below the minimum 1"),
    ],
)
def test_int_errors(template, raw, message) -> None:
    assert errors(template, n=raw) == [f"param 'n': {message}"]


def test_float(template) -> None:
    assert ok(template, ratio="0.25")["ratio"] == 0.25
    assert ok(template, ratio=1)["ratio"] == 1.0 and type(ok(template, ratio=1)["ratio"]) is float
    assert errors(template, ratio="1.5") == ["param 'ratio': 1.5 is above the maximum 1"]
    assert errors(template, ratio=False) == [
        "param 'ratio': expected a number, got a boolean False"
    ]
    assert errors(template, ratio="nan") == ["param 'ratio': expected a finite number, got 'nan'"]
    assert errors(template, ratio="half") == ["param 'ratio': expected a number, got 'half'"]


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("False", False),
        ("yes", True),
        ("no", False),
        ("1", True),
        ("0", False),
        (1, True),
        (0, False),
        ("on", True),
        ("OFF", False),
    ],
)
def test_bool_coercion(template, raw, value) -> None:
    assert ok(template, flag=raw)["flag"] is value


@pytest.mark.parametrize("raw", ["maybe", 2, [True]])
def test_bool_errors(template, raw) -> None:
    assert errors(template, flag=raw)[0].startswith("param 'flag': expected true or false")


def test_string(template) -> None:
    assert ok(template, name="abc_1")["name"] == "abc_1"
    assert ok(template, token=42)["token"] == "42"
    assert errors(template, name="Bad Name") == [
        "param 'name': 'Bad Name' does not match pattern ^[a-z0-9_]+$"
    ]
    assert errors(template, name=["a"]) == ["param 'name': expected a string, got a list"]
    long = "X" * 200
    (problem,) = errors(template, name=long)
    assert len(problem) < 120 and problem.startswith("param 'name': 'XXXX") and "..." in problem


def test_secret_values_never_appear_in_messages(template) -> None:
    assert ok(template, password="hunter2hunter2")["password"] == "hunter2hunter2"
    problems = errors(template, password="hunter2")
    assert problems == ["param 'password': value does not match pattern ^.{8,}$"]
    problems = errors(template, password={"nested": "hunter2"})
    assert problems == ["param 'password': expected a string, got a mapping"]
    assert "hunter2" not in str(problems)
    assert secret_names(template) == {"password"}


def test_enum(template) -> None:
    assert ok(template, mode="slow")["mode"] == "slow"
    assert ok(template, level="2")["level"] == 2  # CLI strings match non-string choices
    assert ok(template, level=3)["level"] == 3
    assert errors(template, mode="medium") == ["param 'mode': 'medium' is not one of: fast, slow"]
    assert errors(template, level=True) == ["param 'level': True is not one of: 1, 2, 3"]


def test_url(template) -> None:
    assert ok(template, url="https://www.quotes.example/x")["url"] == "https://www.quotes.example/x"
    assert ok(template, url="http://QUOTES.example:8080/")["url"] == "http://QUOTES.example:8080/"
    assert errors(template, url="file:///etc/passwd") == [
        "param 'url': URL scheme 'file:' is not allowed (only http and https are): 'file:///etc/passwd'"
    ]
    assert errors(template, url="https://evilquotes.example/") == [
        "param 'url': host 'evilquotes.example' is not in allowed_domains (quotes.example)"
    ]
    assert errors(template, url="quotes.example/x")[0].endswith(
        "has no scheme; only http and https URLs are allowed"
    )


@pytest.mark.parametrize("bad", ["plain", "a@b", "a b@c.d", "@c.d", "a@@c.d"])
def test_email(template, bad) -> None:
    assert ok(template, mail="jo.doe+x@mail.example.org")["mail"] == "jo.doe+x@mail.example.org"
    assert errors(template, mail=bad) == [f"param 'mail': {bad!r} is not an email address"]


def test_list_coercion(template) -> None:
    assert ok(template, tags='["a", "b"]')["tags"] == ["a", "b"]
    assert ok(template, tags="a, b ,c")["tags"] == ["a", "b", "c"]
    assert ok(template, tags=("x",))["tags"] == ["x"]
    assert ok(template, ids="1,2")["ids"] == [1, 2]
    assert ok(template, ids=[3, "4"])["ids"] == [3, 4]
    assert ok(template, anything='[1, "a", true]')["anything"] == [1, "a", True]


def test_list_errors(template) -> None:
    assert errors(template, tags="a,b,c,d") == [
        "param 'tags': has 4 items, more than the maximum 3"
    ]
    assert errors(template, ids="") == ["param 'ids': has 0 items, fewer than the minimum 1"]
    assert errors(template, ids="1,x,2.5") == [
        "param 'ids': item 1: expected an integer, got 'x'; item 2: expected an integer, got '2.5'"
    ]
    assert errors(template, tags='["a",') == [
        "param 'tags': looks like a JSON list but does not parse: Expecting value"
    ]
    assert errors(template, tags=5) == [
        "param 'tags': expected a list (JSON or comma-separated), got an integer"
    ]


def test_every_problem_is_listed(template) -> None:
    problems = errors(template, n="x", mode="z", mail="nope", bogus=1)
    assert len(problems) == 4
    assert [p.split(":")[0] for p in problems] == [
        "unknown param 'bogus'; accepted params",
        "param 'n'",
        "param 'mode'",
        "param 'mail'",
    ]
