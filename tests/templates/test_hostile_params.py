"""Params a caller can hand over that are not plain JSON, or too big: each is a ParamError.

Before, these raised raw TypeError / ValueError / UnicodeEncodeError / RecursionError, or were
accepted and broke the store or the broker later.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from browserq.errors import ParamError
from browserq.templates import load_template_text, validate_params

TEMPLATE = load_template_text(
    textwrap.dedent(
        """
        name: p
        version: 1.0.0
        params:
          s: {type: string}
          n: {type: int}
          f: {type: float}
          l: {type: list}
          li: {type: list, items: int}
          pw: {type: secret}
        steps:
          - {action: click, selector: a}
        """
    )
).template


def deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


class Opaque:
    pass


HOSTILE: dict[str, tuple[Any, str]] = {
    "params as a list": ([1, 2], "params must be a mapping"),
    "params as a string": ("s=1", "params must be a mapping"),
    "params as pairs": ((("s", "x"),), "params must be a mapping"),
    "a non-string name": ({1: "x"}, "param names must be strings"),
    "a surrogate in a name": ({"s\ud800": "x"}, "not valid Unicode"),
    "a 5,000-digit int": ({"n": 10**5000}, "more than 100 digits"),
    "a 5,000-digit int as text": ({"n": "9" * 5000}, "more than 100 digits"),
    "a 5,000-digit int in a list": ({"l": [10**5000]}, "more than 100 digits"),
    "a 5,000-digit int in a typed list": ({"li": ["9" * 5000]}, "more than 100 digits"),
    "a lone surrogate": ({"s": "a\ud800b"}, "lone surrogate"),
    "a lone surrogate in a secret": ({"pw": "\udc80secret"}, "lone surrogate"),
    "a NUL character": ({"s": "a\x00b"}, "NUL character"),
    "NaN in a list": ({"l": [float("nan")]}, "not a finite number"),
    "infinity": ({"f": float("inf")}, "not a finite number"),
    "a set": ({"l": [{1, 2}]}, "set cannot be sent as JSON"),
    "an object": ({"l": [Opaque()]}, "Opaque cannot be sent as JSON"),
    "bytes": ({"s": b"abc"}, "bytes cannot be sent as JSON"),
    "a non-string key inside": ({"l": [{1: 2}]}, "mapping keys must be strings"),
    "5,000 nested lists": ({"l": deep(5000)}, "nested more than 32"),
    "5,000 nested lists as JSON text": ({"l": "[" * 5000 + "]" * 5000}, "too deep or too large"),
    "a 10 MB param": ({"s": "x" * 10_000_000}, "BROWSERQ_MAX_PARAMS_BYTES"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_params_are_param_errors(case: str) -> None:
    raw, fragment = HOSTILE[case]
    with pytest.raises(ParamError) as info:
        validate_params(TEMPLATE, raw)
    message = str(info.value)
    assert fragment in message, message
    assert len(message) < 1000  # nothing huge is echoed
    assert "secret" not in message.replace("secret params", "")  # a secret value is never shown


def test_the_size_limit_names_the_param_and_the_limit() -> None:
    with pytest.raises(ParamError) as info:
        validate_params(TEMPLATE, {"s": "x" * 5000, "l": ["y"] * 10}, max_bytes=4096)
    (problem,) = info.value.problems
    assert "over the limit of 4,096" in problem and "'s' is 5,002 bytes" in problem
    # at the limit is fine; the default limit takes ordinary params
    assert validate_params(TEMPLATE, {"s": "x" * 4000}, max_bytes=4096)["s"] == "x" * 4000
    assert validate_params(TEMPLATE, {"s": "x" * 100_000})["s"] == "x" * 100_000


def test_every_problem_is_listed_at_once() -> None:
    with pytest.raises(ParamError) as info:
        validate_params(TEMPLATE, {"s": "\x00", "n": 10**200, 3: 1})
    assert len(info.value.problems) == 3


def test_ordinary_json_still_passes() -> None:
    values = validate_params(
        TEMPLATE,
        {"s": "ünï ✓", "n": 10**99, "f": 1e308, "l": [{"a": [1, None, True]}, "x"], "li": "[1, 2]"},
    )
    assert values["n"] == 10**99 and values["l"][0] == {"a": [1, None, True]}
    assert values["li"] == [1, 2]
