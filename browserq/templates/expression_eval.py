"""Judging a parsed ``if`` expression (:mod:`browserq.templates.expression`) against data.

Only data is read: mapping keys and list indexes, never an attribute of a Python object. A name
that points nowhere (an output whose step was skipped, a missing key) is null. Comparisons follow
JSON: ``true`` is not ``1``, ordering needs two numbers or two strings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from browserq.templates.expression import (
    Expression,
    ListOf,
    Literal,
    Logic,
    Name,
    Node,
    Not,
)


class EvaluationError(ValueError):
    """The expression is well formed but its values do not fit (``"a" < 3``)."""


def truthy(value: Any) -> bool:
    """JSON truthiness: null, false, 0, "" and empty lists/mappings are false."""
    if value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, str | list | tuple | dict):
        return len(value) > 0
    return True


def resolve(parts: Sequence[str], scope: Mapping[str, Any]) -> Any:
    """The data a dotted name points to; ``None`` where it points nowhere (a skipped output).

    Only mapping keys and list indexes are walked: never an attribute of a Python object."""
    current: Any = scope
    for part in parts:
        if isinstance(current, Mapping):
            current = current.get(part)
        elif isinstance(current, list | tuple) and part.lstrip("-").isdigit():
            index = int(part)
            current = current[index] if -len(current) <= index < len(current) else None
        else:
            return None
        if current is None:
            return None
    return current


def evaluate(expression: Expression, scope: Mapping[str, Any]) -> bool:
    """Whether the expression holds in ``scope`` (``{"params", "outputs", "run", "loop"}``)."""
    return truthy(_value(expression.tree, scope))


def _value(node: Node, scope: Mapping[str, Any]) -> Any:
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, Name):
        return resolve(node.parts, scope)
    if isinstance(node, ListOf):
        return [_value(item, scope) for item in node.items]
    if isinstance(node, Not):
        return not truthy(_value(node.operand, scope))
    if isinstance(node, Logic):
        left = truthy(_value(node.left, scope))
        if node.op == "and":
            return left and truthy(_value(node.right, scope))
        return left or truthy(_value(node.right, scope))
    return _compare(node.op, _value(node.left, scope), _value(node.right, scope))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "list"
    return "mapping" if isinstance(value, Mapping) else type(value).__name__


def _equal(left: Any, right: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, lists compare item by item."""
    if _kind(left) != _kind(right):
        return False
    if isinstance(left, list | tuple):
        return len(left) == len(right) and all(_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, float) or isinstance(right, float):
        return not (math.isnan(left) or math.isnan(right)) and left == right
    return bool(left == right)


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    if op in ("in", "not in"):
        found = _contains(right, left)
        return found if op == "in" else not found
    kinds = (_kind(left), _kind(right))
    if kinds not in (("number", "number"), ("string", "string")):
        raise EvaluationError(
            f"cannot order a {kinds[0]} and a {kinds[1]} with {op!r} "
            "(both sides must be numbers, or both strings)"
        )
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, list | tuple):
        return any(_equal(item, element) for element in container)
    if isinstance(container, str) and isinstance(item, str):
        return item in container
    if isinstance(container, Mapping) and isinstance(item, str):
        return item in container
    if container is None:
        return False  # an output that was not stored contains nothing
    raise EvaluationError(
        f"'in' needs a list, a string (for a substring) or a mapping (for a key) on its right; "
        f"got a {_kind(container)}"
    )
