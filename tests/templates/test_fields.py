"""The schema's building blocks, checked on their own (YAML-level messages: test_loader)."""

from __future__ import annotations

import pydantic
import pytest

from browserq.templates.fields import (
    MAX_NAME_LENGTH,
    StrictModel,
    Text,
    exactly_one,
    valid_name,
    valid_version,
    version_tuple,
)


def test_versions_sort_by_number_not_by_text() -> None:
    assert sorted(["1.10.0", "1.9.0", "1.2.10", "1.2.9"], key=version_tuple) == [
        "1.2.9", "1.2.10", "1.9.0", "1.10.0",
    ]


class _Box(StrictModel):
    text: Text
    a: int | None = None
    b: int | None = None


def test_typed_text_takes_yaml_scalars_as_their_text() -> None:
    assert [_Box(text=v).text for v in (42, 1.5, True, False, "x")] == ["42", "1.5", "true", "false", "x"]


def test_strict_models_refuse_unknown_keys_and_changes() -> None:
    with pytest.raises(pydantic.ValidationError, match="Extra inputs are not permitted"):
        _Box(text="x", selectr="a")
    box = _Box(text="x")
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        box.text = "y"


def test_exactly_one_names_what_was_given() -> None:
    exactly_one(_Box(text="x", a=1), ("a", "b"), "thing")
    with pytest.raises(ValueError, match=r"^thing needs exactly one of a, b$"):
        exactly_one(_Box(text="x"), ("a", "b"), "thing")
    with pytest.raises(ValueError, match=r"^thing needs exactly one of a, b; got a, b$"):
        exactly_one(_Box(text="x", a=1, b=2), ("a", "b"), "thing")


def test_names_and_versions() -> None:
    assert valid_name("quotes_v2.x-1") == "quotes_v2.x-1"
    for bad in ("Quotes", "-x", "a b"):
        with pytest.raises(ValueError, match="lower-case letters"):
            valid_name(bad)
    with pytest.raises(ValueError, match=f"the limit is {MAX_NAME_LENGTH}"):
        valid_name("a" * (MAX_NAME_LENGTH + 1))
    assert valid_version("20261201.0.1") == "20261201.0.1"
    with pytest.raises(ValueError, match=r"got 1\.2 \(quote it in YAML\)"):
        valid_version(1.2)
    with pytest.raises(ValueError, match="at most 9 digits"):
        valid_version("1.2.1234567890")
