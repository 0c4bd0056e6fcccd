"""Template regexes run in RE2 (linear time) and are refused at the producer when they are invalid."""

from __future__ import annotations

import pytest

from browserq.errors import ParamError
from browserq.execute.accept import prepare_loaded
from browserq.templates import validate_params
from browserq.templates.regex import url_predicate

#: Exponential for a backtracking engine (Python's re, JavaScript's): 2^n steps for n letters.
CATASTROPHIC = "(a+)+$"
EVIL_INPUT = "a" * 5000 + "!"

WAIT_FROM_PARAM = """\
name: waits
version: 1.0.0
params:
  p: {type: string, required: true}
steps:
  - {action: navigate, url: "http://127.0.0.1/"}
  - {id: until, action: wait, url: "re:${p}"}
"""


@pytest.mark.timeout(60, method="thread")  # a backtracking engine holds the GIL: signals cannot stop it
def test_a_catastrophic_param_pattern_is_checked_in_linear_time(load) -> None:
    loaded = load(
        f"""
        name: pat
        version: 1.0.0
        params:
          code: {{type: string, pattern: "{CATASTROPHIC}"}}
        steps:
          - {{action: navigate, url: "http://127.0.0.1/"}}
        """
    )
    with pytest.raises(ParamError) as caught:  # with Python's re this call would not return
        validate_params(loaded.template, {"code": EVIL_INPUT})
    assert "does not match pattern (a+)+$" in str(caught.value)
    assert validate_params(loaded.template, {"code": "aaaa"})["code"] == "aaaa"


@pytest.mark.timeout(60, method="thread")
def test_catastrophic_url_patterns_match_in_linear_time() -> None:
    url = "http://127.0.0.1/" + EVIL_INPUT
    assert url_predicate("re:" + CATASTROPHIC)(url) is False
    assert url_predicate("**" + "a*" * 12 + "b")(url) is False  # a glob of many stars, too
    assert url_predicate("re:a+!$")(url) is True
    assert url_predicate("**/quotes/*")("http://x/quotes/2") is True
    assert url_predicate("**/quotes/*")("http://x/other/2") is False


@pytest.mark.parametrize(
    ("step", "where", "expected"),
    [
        ('{action: wait, url: "re:(a)\\\\1"}', "steps[1].url", "invalid regular expression '(a)\\\\1'"),
        ('{action: assert, url: "re:(?=x)y"}', "steps[1].url", "invalid perl operator: (?="),
        ('{action: wait, url: "**/a{b"}', "steps[1].url", "invalid URL glob '**/a{b'"),
        (
            '{action: click, selector: a, side_effect: true, postcondition: {selector: b, url_matches: "re:(x"}}',
            "steps[1].postcondition.url_matches",
            "invalid regular expression '(x'",
        ),
    ],
)
def test_literal_patterns_are_checked_with_re2_at_load(problems, step: str, where: str, expected: str) -> None:
    found = problems(
        f'name: p\nversion: 1.0.0\nsteps:\n  - {{action: navigate, url: "http://127.0.0.1/"}}\n  - {step}\n'
    )
    assert len(found) == 1 and found[0].startswith(f"line 5: {where}: "), found
    assert expected in found[0], found


def test_a_pattern_built_from_params_is_refused_before_enqueue(load) -> None:
    loaded = load(WAIT_FROM_PARAM)
    with pytest.raises(ParamError) as caught:
        prepare_loaded(loaded, {"p": "(unclosed"})
    message = str(caught.value)
    assert "step until (wait) url: 're:${p}' gives invalid regular expression '(unclosed'" in message, message
    assert "RE2" in message
    # A catastrophic one is fine: RE2 runs it in linear time.
    assert prepare_loaded(loaded, {"p": CATASTROPHIC}).params["p"] == CATASTROPHIC


def test_a_secret_in_a_bad_pattern_is_not_echoed(load) -> None:
    loaded = load(WAIT_FROM_PARAM.replace("{type: string, required: true}", "{type: secret, required: true}"))
    with pytest.raises(ParamError) as caught:
        prepare_loaded(loaded, {"p": "hunter2(("})
    assert "hunter2" not in str(caught.value) and "'re:${p}' is not a valid pattern" in str(caught.value)
