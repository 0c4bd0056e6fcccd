"""Pydantic's validation errors rewritten for template authors.

Pydantic reports ``("steps", 1, "click", "selectr")`` and "Extra inputs are not permitted"; an
author wants "line 9: steps[1]: unknown field 'selectr' for action 'click'; allowed fields: ...".
This module maps each error to its YAML line and a plain sentence.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from browserq.templates.conditions import WhenSpec
from browserq.templates.interpolate import NUMBER_TAG, REFERENCE_TAG
from browserq.templates.model import ParamSpec, Template
from browserq.templates.params import PARAM_TYPES, describe, show
from browserq.templates.settings_model import TemplateSettings
from browserq.templates.source import Location, NodeIndex, Problem, format_location
from browserq.templates.steps import (
    ACTION_REPEAT,
    ACTIONS,
    STEP_TAGS,
    ActionStep,
    BlockStep,
    FieldSpec,
    RepeatSpec,
    RepeatStep,
    step_tag,
)

VALID_ACTIONS = ", ".join(sorted(ACTIONS))


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``" (did you mean 'click'?)"`` when something close exists, else ''."""
    close = difflib.get_close_matches(word, [str(o) for o in options], n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def value_at(data: Any, loc: Sequence[Any]) -> Any:
    """The raw value at ``loc`` in the loaded YAML data, or None."""
    for part in loc:
        if (
            (isinstance(data, dict)
            and part in data)
            or (isinstance(data, list)
            and isinstance(part, int)
            and 0 <= part < len(data))
        ):
            data = data[part]
        else:
            return None
    return data


def model_at(loc: Location, data: Any) -> type[BaseModel] | None:
    """Which model validates the mapping at ``loc`` (for listing its allowed fields)."""
    if not loc:
        return Template
    if loc == ("settings",):
        return TemplateSettings
    if len(loc) == 2 and loc[0] == "params":
        return ParamSpec
    if isinstance(loc[-1], int) and len(loc) >= 2 and loc[-2] == "steps":
        tag = step_tag(value_at(data, loc))
        containers: dict[str, type[BaseModel]] = {"repeat": RepeatStep, "block": BlockStep}
        return containers.get(tag or "") or ACTIONS.get(tag or "")
    if loc[-1] == "repeat":
        return RepeatSpec
    if loc[-1] == "when":
        return WhenSpec
    if len(loc) >= 2 and loc[-2] == "fields":
        return FieldSpec
    return None


def _strip_union_tags(loc: Sequence[Any]) -> list[Any]:
    """Drop the tag pydantic inserts after a step's index (``steps, 1, "click", ...``)."""
    out: list[Any] = []
    for i, part in enumerate(loc):
        after_step = i >= 2 and isinstance(loc[i - 1], int) and loc[i - 2] == "steps"
        if after_step and isinstance(part, str) and part in STEP_TAGS:
            continue
        if i == len(loc) - 1 and part in (NUMBER_TAG, REFERENCE_TAG) and i > 0:
            continue  # the form of a numeric field that may be ${param} (fields.interpolable)
        out.append(part)
    return out


def _owner(model: type[BaseModel] | None, data: Any, loc: Location) -> str:
    if model is not None and issubclass(model, ActionStep):
        return f" for action '{value_at(data, loc).get('action')}'"
    if model is RepeatStep:
        return " for a repeat step"
    if model is BlockStep:
        return " for a block (a step with steps:)"
    if model is WhenSpec:
        return " in when"
    return ""


def _allowed(model: type[BaseModel] | None) -> str:
    if model is None:
        return ""
    if issubclass(model, ActionStep):
        own = ", ".join(model.own_fields()) or "none"
        common = ", ".join(f for f in ActionStep.COMMON_FIELDS if f != "action")
        return f"; allowed fields: {own} (and the common {common})"
    return f"; allowed fields: {', '.join(_field_names(model))}"


def _field_names(model: type[BaseModel]) -> list[str]:
    """A model's fields as an author writes them (``if``, not ``if_``)."""
    return [info.alias or name for name, info in model.model_fields.items()]


def _message(err: ErrorDetails, loc: Location, full: list[Any], data: Any, max_repeat: int) -> str:
    kind = err["type"]
    ctx: dict[str, Any] = dict(err.get("ctx") or {})
    value = err.get("input")
    if kind == "missing":
        field = full[-1] if full else "?"
        if field == "max" and loc and loc[-1] == "repeat":
            return (
                f"repeat has no max, so it would be unbounded; give max: an integer 1..{max_repeat}"
                " or ${param} of an int param that declares a max"
            )
        model = model_at(loc, data)
        owner = _owner(model, data, loc)
        return f"missing required field '{field}'{owner}"
    if kind == "extra_forbidden":
        field = str(full[-1])
        model = model_at(loc[:-1], data)
        if model is RepeatStep and field == "action":
            return "a step has either 'action' or 'repeat', not both; put actions in repeat.steps"
        if model is BlockStep and field == "action":
            return "a step has either 'action' or 'steps' (a block), not both; put actions in steps"
        options = _field_names(model) if model else []
        hint = did_you_mean(field, options)
        return f"unknown field '{field}'{_owner(model, data, loc[:-1])}{hint}{_allowed(model)}"
    if kind == "union_tag_invalid":
        tag = str(ctx.get("tag"))
        if tag == ACTION_REPEAT:
            return "'repeat' is not an action; write a repeat as '- repeat: {max: N, steps: [...]}'"
        return f"unknown action '{tag}'{did_you_mean(tag, ACTIONS)}; valid actions: {VALID_ACTIONS}"
    if kind == "union_tag_not_found":
        if not isinstance(value, dict):
            return f"a step must be a mapping with an 'action' key, got {describe(value)}"
        if "action" in value:
            return f"action must be a string, got {describe(value['action'])}"
        return f"step has no 'action' (or 'repeat'); valid actions: {VALID_ACTIONS}"
    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
        if len(loc) == 3 and loc[0] == "params" and loc[2] == "type":
            return f"unknown param type {show(value)}; valid types: {', '.join(PARAM_TYPES)}"
        return f"invalid value {show(value)}; valid values: {expected}"
    if kind in ("value_error", "assertion_error"):
        return str(ctx.get("error", err["msg"]))
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        if len(loc) >= 2 and loc[-2] == "fields":
            return (
                f"a field is a sub-selector string or a mapping of selector, attr, html, all; "
                f"got {describe(value)}"
            )
        return f"expected a mapping, got {describe(value)}"
    if kind == "list_type":
        return f"expected a list, got {describe(value)}"
    if kind == "string_type":
        return f"expected a string, got {describe(value)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer, got {describe(value)}"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"expected a number, got {describe(value)}"
    if kind in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {describe(value)}"
    bounds = {
        "greater_than": ("greater than", "gt"),
        "greater_than_equal": ("at least", "ge"),
        "less_than": ("less than", "lt"),
        "less_than_equal": ("at most", "le"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        bound = ctx.get(key)
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        return f"must be {words} {bound}, got {show(value)}"
    if kind in ("too_short", "string_too_short"):
        return "must not be empty"
    return str(err["msg"])


def pydantic_problems(
    exc: ValidationError, index: NodeIndex, data: Any, *, max_repeat: int
) -> list[Problem]:
    """One Problem per pydantic error, located in the YAML and phrased for an author."""
    problems: list[Problem] = []
    for err in exc.errors(include_url=False):
        full = _strip_union_tags(err["loc"])
        loc, line = index.locate(full)
        message = _message(err, loc, full, data, max_repeat)
        shown = loc[:-1] if err["type"] == "extra_forbidden" and loc else loc
        problems.append(Problem(line, format_location(shown), message))
    return problems
