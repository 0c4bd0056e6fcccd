"""Reading a template's YAML: the data, the line of any location, duplicate keys, bounded depth."""

from __future__ import annotations

import pytest

from browserq.templates.source import (
    MAX_DEPTH,
    NodeIndex,
    YamlSyntaxError,
    format_location,
    parse_yaml,
)

TEXT = """name: t
version: 1.0.0
steps:
  - action: click
    selector: a
  - action: fill
    selector: b
    selector: c
"""


def test_lines_of_locations_and_the_part_that_exists() -> None:
    data, root = parse_yaml(TEXT)
    assert data["steps"][1]["selector"] == "c"  # YAML keeps the last duplicate...
    index = NodeIndex(root)
    assert index.line(("steps", 1, "action")) == 6
    # a pydantic union tag ("fill") is not in the document: skipped, the rest still located
    assert index.locate(("steps", 1, "fill", "selector")) == (("steps", 1, "selector"), 7)
    assert index.line(("steps", 9)) == 3
    # ...which is why a duplicate is a problem of its own, with both lines
    [(loc, line, message)] = list(index.duplicate_keys())
    assert loc == ("steps", 1) and line == 8 and "first at line 7" in message


def test_format_location() -> None:
    assert format_location(("steps", 1, "repeat", "steps", 0)) == "steps[1].repeat.steps[0]"
    assert format_location(()) == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: [1, 2\n", "invalid YAML"),
        ("a: 1\n---\nb: 2\n", "invalid YAML"),
        ("x: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n", f"more than {MAX_DEPTH} deep"),
    ],
    ids=["unclosed", "two-documents", "too-deep"],
)
def test_what_is_not_one_yaml_document_is_a_syntax_error(text: str, expected: str) -> None:
    with pytest.raises(YamlSyntaxError, match=expected):
        parse_yaml(text)


def test_an_empty_document_has_no_root() -> None:
    assert parse_yaml("# nothing\n") == (None, None)
