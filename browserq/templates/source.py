"""YAML text → data plus a node tree, so any problem can be reported with its line.

The loader validates plain data (what ``yaml.safe_load`` gives) but keeps the composed node tree
alongside; a problem's location (``("steps", 1, "url")``) is walked down that tree to find the
line an author should look at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

Location = tuple[str | int, ...]
#: Nodes visited while expanding aliases before we call a document hostile.
MAX_EXPANDED_NODES = 200_000
#: Deepest nesting of mappings/lists (aliases expanded). A real template needs ~30; without a bound
#: PyYAML's composer, pydantic and every walk over the data recurse until ``RecursionError``.
MAX_DEPTH = 64
#: Longest integer literal. Python refuses to print ints over 4,300 digits (``ValueError``).
MAX_INT_DIGITS = 100
_INT_TAG = "tag:yaml.org,2002:int"
#: Text no store can keep: NUL (PostgreSQL) and lone surrogates (not UTF-8), e.g. from "\0" or "\ud800".
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with a template, sortable by line."""

    line: int
    path: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "template"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class YamlSyntaxError(ValueError):
    """The text is not YAML (or is several documents); the message carries line and column."""


def format_location(loc: Sequence[str | int]) -> str:
    """``("steps", 1, "repeat", "steps", 0)`` → ``steps[1].repeat.steps[0]``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class _BoundedLoader(yaml.SafeLoader):
    """A SafeLoader whose (recursive) composer refuses documents nested deeper than MAX_DEPTH."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise YamlSyntaxError(
                    f"line {line}: the document nests lists/mappings more than {MAX_DEPTH} deep"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def parse_yaml(text: str) -> tuple[Any, Node | None]:
    """The document's data and its node tree (None for an empty document)."""
    try:  # the reader refuses unprintable characters (NUL…) already when it is built
        loader = _BoundedLoader(text)
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(f"invalid YAML: {' '.join(str(exc).split())}") from None
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        _check_expansion(root)
        data = loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            if exc.context.startswith("while"):
                what = f"{exc.problem} ({exc.context})"
            else:
                what = f"{exc.context}, {exc.problem}"
        if mark is None:
            raise YamlSyntaxError(f"invalid YAML: {what}") from None
        raise YamlSyntaxError(
            f"line {mark.line + 1}, column {mark.column + 1}: invalid YAML: {what}"
        ) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    return data, root


def _check_expansion(root: Node) -> None:
    """Refuse recursive aliases, alias bombs, deep nesting (through aliases too) and integers
    too long to handle, before anything constructs or walks the data."""
    visited = 0
    stack: list[tuple[Node, frozenset[int]]] = [(root, frozenset())]
    while stack:
        node, ancestors = stack.pop()
        visited += 1
        line = node.start_mark.line + 1
        if visited > MAX_EXPANDED_NODES:
            raise YamlSyntaxError("the document is too large once its aliases are expanded")
        if id(node) in ancestors:
            raise YamlSyntaxError(f"line {line}: invalid YAML: an alias refers to itself")
        if len(ancestors) >= MAX_DEPTH:
            raise YamlSyntaxError(
                f"line {line}: the document nests lists/mappings more than {MAX_DEPTH} deep "
                "(counting aliases)"
            )
        if isinstance(node, ScalarNode) and _UNSTORABLE.search(node.value):
            raise YamlSyntaxError(
                f"line {line}: the text holds a NUL character or a lone surrogate "
                "(an escape such as \\0 or \\ud800), which cannot be stored; remove it"
            )
        if isinstance(node, ScalarNode) and node.tag == _INT_TAG and len(node.value) > MAX_INT_DIGITS:
            raise YamlSyntaxError(
                f"line {line}: an integer of {len(node.value)} characters; integers are limited "
                f"to {MAX_INT_DIGITS} digits (quote it if it is meant as text)"
            )
        if isinstance(node, SequenceNode):
            inner = ancestors | {id(node)}
            stack.extend((child, inner) for child in node.value)
        elif isinstance(node, MappingNode):
            inner = ancestors | {id(node)}
            for key, value in node.value:
                stack.extend(((key, inner), (value, inner)))


class NodeIndex:
    """Finds the line of a location inside a composed YAML document."""

    def __init__(self, root: Node) -> None:
        self.root = root

    def locate(self, loc: Sequence[Any]) -> tuple[Location, int]:
        """The part of ``loc`` that exists in the document, and the line it ends on.

        Elements that are not keys or indexes here (pydantic's union member names, a missing
        field's name) are skipped. A location ending on a mapping key reports the key's line.
        """
        node = self.root
        matched: list[str | int] = []
        line = node.start_mark.line + 1
        for part in loc:
            child = _child(node, part)
            if child is None:
                continue
            key_node, node = child
            matched.append(part)
            line = (key_node or node).start_mark.line + 1
        return tuple(matched), line

    def line(self, loc: Sequence[Any]) -> int:
        return self.locate(loc)[1]

    def duplicate_keys(self) -> Iterator[tuple[Location, int, str]]:
        """``(location of the mapping, line, message)`` for each key given twice."""
        yield from _duplicates(self.root, ())


def _child(node: Node, part: Any) -> tuple[Node | None, Node] | None:
    if isinstance(node, MappingNode):
        for key, value in node.value:
            if (
                isinstance(key, ScalarNode)
                and key.value == str(part)
                and not isinstance(part, bool)
            ):
                return key, value
        return None
    is_index = isinstance(part, int) and not isinstance(part, bool)
    if isinstance(node, SequenceNode) and is_index and 0 <= part < len(node.value):
        return None, node.value[part]
    return None


def _duplicates(node: Node, loc: Location) -> Iterator[tuple[Location, int, str]]:
    if isinstance(node, MappingNode):
        first_line: dict[str, int] = {}
        for key, value in node.value:
            if isinstance(key, ScalarNode):
                line = key.start_mark.line + 1
                if key.value in first_line and key.value != "<<":
                    message = (
                        f"key {key.value!r} appears twice (first at line {first_line[key.value]});"
                        " YAML would silently keep only the last one"
                    )
                    yield loc, line, message
                first_line.setdefault(key.value, line)
                yield from _duplicates(value, (*loc, key.value))
    elif isinstance(node, SequenceNode):
        for index, child in enumerate(node.value):
            yield from _duplicates(child, (*loc, index))
