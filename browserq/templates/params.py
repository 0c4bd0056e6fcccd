"""Run parameters: coerce raw values (JSON, or ``-p key=value`` strings) to a template's params.

Every problem is collected so a caller fixes all of them at once. Secret values never appear in
a message; other values are echoed, truncated.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from browserq.errors import ParamError, StepFailed
from browserq.guards import check_url
from browserq.templates import regex

if TYPE_CHECKING:
    from browserq.templates.model import ParamSpec, Template

PARAM_TYPES = ("bool", "email", "enum", "float", "int", "list", "secret", "string", "url")
ITEM_TYPES = ("bool", "float", "int", "string")
_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}
_EMAIL = re.compile(r"^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$")


class ParamValueError(ValueError):
    """One parameter value is unusable; the message is safe to show (no secret in it)."""


def show(value: Any, limit: int = 60) -> str:
    """A value for an error message, truncated."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_name(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a mapping",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _scalar(kind: str, value: Any, *, secret: bool = False) -> Any:
    """Coerce one scalar to ``kind`` (string, int, float, bool)."""
    shown = "the value" if secret else show(value)
    if kind == "int":
        if isinstance(value, bool):
            raise ParamValueError(f"expected an integer, got a boolean {shown}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
            return int(value)
        raise ParamValueError(f"expected an integer, got {shown}")
    if kind == "float":
        if isinstance(value, bool):
            raise ParamValueError(f"expected a number, got a boolean {shown}")
        if isinstance(value, int | float):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise ParamValueError(f"expected a number, got {shown}") from None
        else:
            raise ParamValueError(f"expected a number, got {_type_name(value)}")
        if not math.isfinite(number):
            raise ParamValueError(f"expected a finite number, got {shown}")
        return number
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise ParamValueError(f"expected true or false (or yes/no, 1/0), got {shown}")
    # string-like
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise ParamValueError(f"expected a string, got {_type_name(value)}")


def _choice_text(choice: Any) -> str:
    return json.dumps(choice) if isinstance(choice, bool) or choice is None else str(choice)


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ParamValueError(
                    f"looks like a JSON list but does not parse: {exc.msg}"
                ) from None
            if isinstance(parsed, list):
                return parsed
        return [item.strip() for item in text.split(",") if item.strip()]
    raise ParamValueError(f"expected a list (JSON or comma-separated), got {_type_name(value)}")


def _range(spec: ParamSpec, number: float, what: str, shown: str) -> None:
    if spec.min is not None and number < spec.min:
        raise ParamValueError(f"{what}{shown} is below the minimum {spec.min}")
    if spec.max is not None and number > spec.max:
        raise ParamValueError(f"{what}{shown} is above the maximum {spec.max}")


def coerce_value(spec: ParamSpec, value: Any, allowed_domains: Sequence[str] = ()) -> Any:
    """``value`` converted to ``spec``'s type and checked; raises ParamValueError.

    Used for run parameters and, by the loader, for a param's own default.
    """
    kind = spec.type
    secret = kind == "secret"
    if kind in ("int", "float"):
        number = _scalar(kind, value)
        _range(spec, number, "", show(number))
        return number
    if kind == "bool":
        return _scalar("bool", value)
    if kind == "enum":
        choices = list(spec.choices or [])
        for choice in choices:
            if type(choice) is type(value) and choice == value:
                return choice
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            for choice in choices:
                if _choice_text(choice) == str(value).strip():
                    return choice
        listed = ", ".join(_choice_text(c) for c in choices)
        raise ParamValueError(f"{show(value)} is not one of: {listed}")
    if kind == "list":
        items = _as_list(value)
        if spec.items:
            converted, bad = [], []
            for index, item in enumerate(items):
                try:
                    converted.append(_scalar(spec.items, item))
                except ParamValueError as exc:
                    bad.append(f"item {index}: {exc}")
            if bad:
                raise ParamValueError("; ".join(bad))
            items = converted
        if spec.min is not None and len(items) < spec.min:
            raise ParamValueError(f"has {len(items)} items, fewer than the minimum {spec.min}")
        if spec.max is not None and len(items) > spec.max:
            raise ParamValueError(f"has {len(items)} items, more than the maximum {spec.max}")
        return items
    text = _scalar("string", value, secret=secret)
    if kind == "url":
        try:
            check_url(text, allowed_domains)
        except StepFailed as exc:
            raise ParamValueError(exc.message) from None
    elif kind == "email" and not _EMAIL.match(text):
        raise ParamValueError(f"{show(text)} is not an email address")
    if spec.pattern is not None and not regex.fullmatch(spec.pattern, text):  # RE2: linear time
        if secret:
            raise ParamValueError("value does not match pattern " + spec.pattern)
        raise ParamValueError(f"{show(text)} does not match pattern {spec.pattern}")
    return text


def validate_params(
    template: Template, raw: Mapping[str, Any] | None, *, template_ref: str = ""
) -> dict[str, Any]:
    """Coerced values for every declared param (defaults applied; absent optional ones are None).

    Raises ``ParamError`` listing every unknown, missing or invalid parameter.
    """
    raw = dict(raw or {})
    ref = template_ref or f"{template.name}@{template.version}"
    problems: list[str] = []
    declared = template.params
    for name in sorted(set(raw) - set(declared)):
        accepted = (
            ", ".join(sorted(declared)) if declared else "none (this template takes no params)"
        )
        problems.append(f"unknown param {name!r}; accepted params: {accepted}")
    values: dict[str, Any] = {}
    for name, spec in declared.items():
        value = raw.get(name)
        if value is None:
            if spec.default is not None:
                values[name] = copy.deepcopy(spec.default)  # callers may mutate it
            elif spec.required:
                problems.append(f"param {name!r}: missing required param ({spec.type})")
            else:
                values[name] = None
            continue
        try:
            values[name] = coerce_value(spec, value, template.settings.allowed_domains)
        except ParamValueError as exc:
            problems.append(f"param {name!r}: {exc}")
    if problems:
        raise ParamError(ref, problems)
    return values


def secret_names(template: Template) -> set[str]:
    """Names of the params whose values must be masked in logs, messages and the store."""
    return {name for name, spec in template.params.items() if spec.type == "secret"}
