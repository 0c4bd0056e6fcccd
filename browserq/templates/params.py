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
from browserq.templates.file_params import (
    DEFAULT_MAX_FILE_PARAM_BYTES,
    FileValueError,
    coerce_file,
    file_param_names,
)
from browserq.templates.regex import fullmatch

if TYPE_CHECKING:  # pragma: no cover
    from browserq.templates.model import ParamSpec, Template

PARAM_TYPES = ("bool", "email", "enum", "file", "float", "int", "list", "secret", "string", "url")
ITEM_TYPES = ("bool", "float", "int", "string")
_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}
_EMAIL = re.compile(r"^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$")
#: Default of BROWSERQ_MAX_PARAMS_BYTES: the params of one run, encoded as JSON.
DEFAULT_MAX_PARAMS_BYTES = 1 << 20
#: Deepest nesting of lists/mappings inside one param value.
MAX_PARAM_DEPTH = 32
#: Longest integer a param may hold (Python cannot even print ints over 4,300 digits).
MAX_INT_DIGITS = 100
_INT_LIMIT = 10**MAX_INT_DIGITS


class ParamValueError(ValueError):
    """One parameter value is unusable; the message is safe to show (no secret in it)."""


def show(value: Any, limit: int = 60) -> str:
    """A value for an error message, truncated."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(value: Any) -> str:
    """A value as an author would name it: ``a string 'abc'``, ``a list``."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"a number {value}"
    if isinstance(value, str):
        return f"a string {show(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _type_name(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        tuple: "a tuple",
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
            if len(value.strip().lstrip("+-")) > MAX_INT_DIGITS:
                raise ParamValueError(f"an integer of more than {MAX_INT_DIGITS} digits")
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
            except (ValueError, RecursionError):  # an int over 4,300 digits, absurd nesting
                raise ParamValueError("looks like a JSON list but is too deep or too large") from None
            if isinstance(parsed, list):
                found = _json_problem(parsed)
                if found:
                    raise ParamValueError(_json_message(found))
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
    if kind == "file":
        try:
            return coerce_file(value, "file")
        except FileValueError as exc:
            raise ParamValueError(str(exc)) from None
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
    if spec.pattern is not None and not fullmatch(spec.pattern, text):  # RE2: linear time
        if secret:
            raise ParamValueError("value does not match pattern " + spec.pattern)
        raise ParamValueError(f"{show(text)} does not match pattern {spec.pattern}")
    return text


def _text_problem(text: str) -> str | None:
    """Why a string cannot be stored or sent (PostgreSQL refuses NUL; UTF-8 refuses surrogates)."""
    if "\x00" in text:
        return "holds a NUL character (U+0000), which cannot be stored; remove it"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode text (it holds a lone surrogate, e.g. from a bad decode)"
    return None


def _json_problem(value: Any, depth: int = 0) -> tuple[str, str] | None:
    """``(where, why)`` when ``value`` is not plain JSON data the store and broker can carry."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        too_long = abs(value) >= _INT_LIMIT
        return ("", f"an integer of more than {MAX_INT_DIGITS} digits") if too_long else None
    if isinstance(value, float):
        return None if math.isfinite(value) else ("", f"{value!r} is not a finite number (JSON has none)")
    if isinstance(value, str):
        problem = _text_problem(value)
        return ("", problem) if problem else None
    if depth >= MAX_PARAM_DEPTH:
        return "", f"nested more than {MAX_PARAM_DEPTH} lists/mappings deep"
    children: list[tuple[str, Any]] = []
    if isinstance(value, list | tuple):
        children = [(f"[{index}]", item) for index, item in enumerate(value)]
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return "", f"mapping keys must be strings, got {_type_name(key)}"
            problem = _text_problem(key)
            if problem:
                return "", f"a key {problem}"
            children.append((f"[{show(key, 30)}]", item))
    else:
        return "", f"{_type_name(value)} cannot be sent as JSON; use strings, numbers, booleans, lists, mappings"
    for where, item in children:
        found = _json_problem(item, depth + 1)
        if found:
            return where + found[0], found[1]
    return None


def _json_message(found: tuple[str, str]) -> str:
    where, why = found
    if len(where) > 60:
        where = where[:57] + "..."
    return f"at {where}: {why}" if where else why


def _json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8"))


def check_raw_params(
    raw: Any, *, template_ref: str, max_bytes: int = DEFAULT_MAX_PARAMS_BYTES
) -> dict[str, Any]:
    """The caller's params as a plain dict, once they are plain JSON within ``max_bytes``.

    Runs before coercion, on what the caller handed over, so nothing that cannot be stored or
    sent ever reaches the store, the broker or a log line. Raises ``ParamError``.
    """
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ParamError(
            template_ref,
            [f"params must be a mapping of param name to value (a dict), got {_type_name(raw)}"],
        )
    problems: list[str] = []
    sizes: dict[str, int] = {}
    for name, value in raw.items():
        if not isinstance(name, str):
            problems.append(f"param names must be strings, got {_type_name(name)} {show(name)}")
            continue
        name_problem = _text_problem(name)
        if name_problem:
            problems.append(f"param name {show(name)} {name_problem}")
            continue
        found = _json_problem(value)
        if found:
            problems.append(f"param {show(name)}: {_json_message(found)}")
            continue
        sizes[name] = _json_size(value)
    if not problems and sum(sizes.values()) > max_bytes:
        largest = sorted(sizes.items(), key=lambda item: -item[1])[:3]
        listed = ", ".join(f"{show(name)} is {size:,} bytes" for name, size in largest)
        problems.append(
            f"params take {sum(sizes.values()):,} bytes as JSON, over the limit of {max_bytes:,} "
            f"(BROWSERQ_MAX_PARAMS_BYTES): {listed}; pass large data by reference (a URL or a key)"
        )
    if problems:
        raise ParamError(template_ref, problems)
    return dict(raw)


def validate_params(
    template: Template,
    raw: Mapping[str, Any] | None,
    *,
    template_ref: str = "",
    max_bytes: int = DEFAULT_MAX_PARAMS_BYTES,
    max_file_bytes: int = DEFAULT_MAX_FILE_PARAM_BYTES,
) -> dict[str, Any]:
    """Coerced values for every declared param (defaults applied; absent optional ones are None).

    Raises ``ParamError`` listing every unknown, missing or invalid parameter, and for params
    that are not plain JSON or larger than ``max_bytes`` in all. A ``file`` param's value is a
    :class:`~browserq.templates.file_params.FileParam` (at most ``max_file_bytes``), outside the
    JSON check and its size: the caller stores it and keeps a reference.
    """
    ref = template_ref or f"{template.name}@{template.version}"
    declared = template.params
    files, problems = _file_values(declared, raw, max_file_bytes)
    if isinstance(raw, Mapping) and file_param_names(declared) & set(raw):
        raw = {k: v for k, v in raw.items() if k not in files and f"param {k!r}: " not in "".join(problems)}
    try:
        raw = check_raw_params(raw, template_ref=ref, max_bytes=max_bytes)
    except ParamError as exc:
        raise ParamError(ref, [*problems, *exc.problems]) from None
    raw.update(files)
    for name in sorted(set(raw) - set(declared)):
        accepted = (
            ", ".join(sorted(declared)) if declared else "none (this template takes no params)"
        )
        problems.append(f"unknown param {show(name)}; accepted params: {accepted}")
    values: dict[str, Any] = {}
    for name, spec in declared.items():
        value = raw.get(name)
        if value is None and spec.type == "file" and f"param {name!r}: " in "".join(problems):
            continue  # given, but unusable: reported above
        if value is None:
            if spec.default is not None:
                values[name] = copy.deepcopy(spec.default)  # callers may mutate it
            elif spec.required:
                problems.append(f"param {name!r}: missing required param ({spec.type})")
            else:
                values[name] = None
            continue
        if spec.type == "file":
            values[name] = value  # coerced by _file_values
            continue
        try:
            values[name] = coerce_value(spec, value, template.settings.allowed_domains)
        except ParamValueError as exc:
            problems.append(f"param {name!r}: {exc}")
    if problems:
        raise ParamError(ref, problems)
    return values


def _file_values(declared: Mapping[str, ParamSpec], raw: Any, max_bytes: int) -> tuple[dict[str, Any], list[str]]:
    """The given ``file`` params coerced, and the problems of those that cannot be."""
    files: dict[str, Any] = {}
    problems: list[str] = []
    if not isinstance(raw, Mapping):
        return files, problems
    for name in sorted(file_param_names(declared) & set(raw)):
        if raw[name] is None:
            continue
        try:
            files[name] = coerce_file(raw[name], name, max_bytes)
        except FileValueError as exc:
            problems.append(f"param {name!r}: {exc}")
    return files, problems


def secret_names(template: Template) -> set[str]:
    """Names of the params whose values must be masked in logs, messages and the store."""
    return {name for name, spec in template.params.items() if spec.type == "secret"}
