"""``${...}`` references in step fields: parsing, static discovery and rendering.

``${name}`` reads a param, ``${outputs.name.0.text}`` walks a stored output, ``${loop.index}``
(0-based) and ``${loop.iteration}`` (1-based) describe the innermost repeat, ``${run.id}`` and
``${run.attempt}`` describe the run. ``$${`` is a literal ``${``. A string that is exactly one
reference keeps the value's type, so ``max: "${max_pages}"`` renders to an int; references inside
longer strings are formatted (lists and dicts as JSON).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from browserq.errors import Codes, StepFailed

#: A dotted reference: a name, then keys or list indexes.
REF_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*$")
_TOKEN = re.compile(r"\$\$\{|\$\{([^{}]*)\}|\$\{")
#: Step fields that are names, never rendered with ``${...}``; ``when`` is judged by the runner
#: (its selector rendered there, its ``if`` an expression of its own).
NOT_INTERPOLATED = frozenset({"id", "action", "into", "when"})
#: The tags of a numeric step field's two forms (``fields.interpolable``): a number, or text
#: with a reference; error locations drop them.
NUMBER_TAG, REFERENCE_TAG = "number", "reference"


def number_form(value: Any) -> str:
    """Which form a numeric step field (``fields.Interpolable``) holds: a reference, or the number."""
    return REFERENCE_TAG if isinstance(value, str) and has_references(value) else NUMBER_TAG
#: What a rendered numeric field must be, by pydantic error type (and its bound's ctx key).
_RULES = {
    "less_than_equal": ("at most", "le"),
    "less_than": ("less than", "lt"),
    "greater_than_equal": ("at least", "ge"),
    "greater_than": ("greater than", "gt"),
}
_KINDS = {
    "int_parsing": "an integer",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_parsing": "a number",
    "float_type": "a number",
    "finite_number": "a finite number",
}


StepT = TypeVar("StepT", bound=BaseModel)
NumberT = TypeVar("NumberT", int, float)


class MalformedReference(ValueError):
    """A ``${`` that is not closed or does not hold a dotted name."""


@dataclass(frozen=True, slots=True)
class Ref:
    """One parsed ``${...}``; ``name`` is the dotted text inside."""

    name: str

    @property
    def parts(self) -> list[str]:
        return self.name.split(".")


def parse(text: str) -> list[str | Ref]:
    """Split ``text`` into literal pieces and references; raises MalformedReference."""
    pieces: list[str | Ref] = []
    literal: list[str] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        if match.start() > pos:
            literal.append(text[pos : match.start()])
        pos = match.end()
        token = match.group(0)
        if token == "$${":
            literal.append("${")
            continue
        body = match.group(1)
        if body is None:
            raise MalformedReference(f"'${{' without a closing '}}' in {_show(text)}")
        name = body.strip()
        if not REF_NAME.match(name):
            raise MalformedReference(
                f"'${{{body}}}' is not a valid reference (expected ${{name}} or ${{a.b.c}})"
            )
        if "".join(literal):
            pieces.append("".join(literal))
        literal = []
        pieces.append(Ref(name))
    literal.append(text[pos:])
    tail = "".join(literal)
    if tail:
        pieces.append(tail)
    return pieces


def has_references(value: Any) -> bool:
    """True if any string in ``value`` holds a ``${...}`` (escapes do not count)."""
    if isinstance(value, str):
        try:
            return any(isinstance(p, Ref) for p in parse(value))
        except MalformedReference:
            return True
    if isinstance(value, Mapping):
        return any(has_references(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(has_references(v) for v in value)
    return False


def references(value: Any) -> set[str]:
    """The dotted names referenced anywhere in ``value`` (malformed ones are skipped)."""
    found: set[str] = set()
    if isinstance(value, str):
        try:
            found.update(p.name for p in parse(value) if isinstance(p, Ref))
        except MalformedReference:
            pass
    elif isinstance(value, Mapping):
        for item in value.values():
            found |= references(item)
    elif isinstance(value, list | tuple):
        for item in value:
            found |= references(item)
    return found


def make_scope(
    params: Mapping[str, Any],
    outputs: Mapping[str, Any] | None = None,
    *,
    run_id: str | None = None,
    attempt: int | None = None,
    loop_index: int | None = None,
) -> dict[str, Any]:
    """The scope ``render`` expects: params at the top, then ``outputs``, ``run`` and ``loop``."""
    scope: dict[str, Any] = dict(params)
    scope["outputs"] = outputs if outputs is not None else {}
    scope["run"] = {"id": run_id, "attempt": attempt}
    if loop_index is not None:
        scope["loop"] = {"index": loop_index, "iteration": loop_index + 1}
    return scope


def lookup(name: str, scope: Mapping[str, Any]) -> Any:
    """The value ``name`` (dotted) points to in ``scope``; StepFailed if it points nowhere."""
    current: Any = scope
    walked: list[str] = []
    for part in name.split("."):
        if isinstance(current, Mapping):
            if part in current:
                current = current[part]
            else:
                where = ".".join(walked)
                keys = ", ".join(sorted(str(k) for k in current)) or "nothing"
                what = f"'{where}' has no key '{part}'" if walked else f"'{part}' is not defined"
                raise _unresolved(name, f"{what} (available: {keys})")
        elif isinstance(current, Sequence) and not isinstance(current, str | bytes):
            if not part.lstrip("-").isdigit():
                raise _unresolved(name, f"'{'.'.join(walked)}' is a list; '{part}' is not an index")
            index = int(part)
            if not -len(current) <= index < len(current):
                raise _unresolved(
                    name, f"index {index} is out of range ('{'.'.join(walked)}' has {len(current)})"
                )
            current = current[index]
        else:
            raise _unresolved(
                name, f"'{'.'.join(walked)}' is a {type(current).__name__}, it has no '{part}'"
            )
        walked.append(part)
    return current


def _unresolved(name: str, detail: str) -> StepFailed:
    return StepFailed(Codes.INVALID_STEP_INPUT, f"cannot resolve ${{{name}}}: {detail}")


def format_value(value: Any) -> str:
    """How a referenced value reads inside a longer string."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | list | tuple | dict):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def render(value: Any, scope: Mapping[str, Any]) -> Any:
    """``value`` with every reference replaced; dicts and lists are walked, keys are not rendered.

    Raises ``StepFailed(INVALID_STEP_INPUT)`` naming the reference that cannot be resolved.
    """
    if isinstance(value, str):
        return _render_string(value, scope)
    if isinstance(value, Mapping):
        return {key: render(item, scope) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [render(item, scope) for item in value]
    return value


def _render_string(text: str, scope: Mapping[str, Any]) -> Any:
    if "${" not in text:
        return text
    try:
        pieces = parse(text)
    except MalformedReference as exc:
        raise StepFailed(Codes.INVALID_STEP_INPUT, str(exc)) from None
    if len(pieces) == 1 and isinstance(pieces[0], Ref):
        return lookup(pieces[0].name, scope)
    return "".join(format_value(lookup(p.name, scope)) if isinstance(p, Ref) else p for p in pieces)


def _show(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def render_step(step: StepT, scope: Mapping[str, Any]) -> StepT:
    """A copy of an action step with its fields rendered and re-validated.

    ``id``, ``action`` and ``into`` are left alone. A rendered value the step
    does not accept (an empty selector, say) raises ``StepFailed(INVALID_STEP_INPUT)``. URL and
    selector-length guards are separate (:mod:`browserq.guards`): they need run settings.
    """
    data = step.model_dump(exclude_unset=True)
    rendered = {k: v if k in NOT_INTERPOLATED else render(v, scope) for k, v in data.items()}
    try:
        result = type(step).model_validate(rendered)
    except ValidationError as exc:
        details = "; ".join(
            _rendered_problem(err, data, rendered) for err in exc.errors(include_url=False)
        )
        raise StepFailed(
            Codes.INVALID_STEP_INPUT, f"step fields are invalid after interpolation: {details}"
        ) from None
    # A value is rendered once: a param whose text is itself ``${b}`` stays that text, which a
    # numeric field took as a reference again. It gave a string (its value is not shown).
    if still_text := [k for k in data if _number_field(type(step), k) and isinstance(getattr(result, k), str)]:
        details = "; ".join(f"{k}: {data[k]} gave a string, but {k} must be a number" for k in still_text)
        raise StepFailed(Codes.INVALID_STEP_INPUT, f"step fields are invalid after interpolation: {details}")
    return result


def _number_field(model: type[BaseModel], name: str) -> bool:
    """Whether ``name`` is a numeric field that may be written ``${...}`` (``fields.Interpolable``)."""
    field = model.model_fields.get(name)
    return field is not None and _takes_number_form([*field.metadata, field.annotation])


def _takes_number_form(parts: Sequence[Any]) -> bool:
    """Whether a field's metadata or annotation (``Interpolable | None`` too) holds the number form."""
    for part in parts:
        if getattr(part, "discriminator", None) is number_form:
            return True
        if (args := get_args(part)) and _takes_number_form(args):
            return True
    return False


def rendered_number(value: NumberT | str, field: str) -> NumberT:
    """A numeric field of a step :func:`render_step` gave back: a number (it refuses text that is
    still a reference), narrowed for the type checker. A step that was never rendered fails as
    render_step would; the value is not shown, it may be a secret."""
    if isinstance(value, str):
        raise StepFailed(Codes.INVALID_STEP_INPUT, f"{field} is text, not a number: the step was not rendered")
    return value


def _rendered_problem(err: Any, data: Mapping[str, Any], rendered: Mapping[str, Any]) -> str:
    """One problem of a rendered step. A field the template wrote as ``${...}`` says which
    reference gave what type of value and what the field takes — a string's value is never
    shown (it may be a secret)."""
    loc = [str(p) for p in err["loc"] if p not in (NUMBER_TAG, REFERENCE_TAG)]
    where = ".".join(loc) or "step"
    raw = data.get(loc[0]) if len(loc) == 1 else None
    if not (isinstance(raw, str) and has_references(raw)):
        return f"{where}: {err['msg']}"
    value = rendered.get(loc[0])
    if err["type"] in _RULES:
        words, key = _RULES[err["type"]]
        bound = err.get("ctx", {}).get(key)
        rule = f"must be {words} {int(bound) if isinstance(bound, float) and bound.is_integer() else bound}"
    else:
        rule = f"must be {_KINDS.get(err['type'], 'a number')}"
    return f"{where}: {raw} gave {_kind_of(value)}, but {where} {rule}"


def _kind_of(value: Any) -> str:
    """A rendered value's type in words; numbers with their value (a secret is always a string)."""
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, int | float):
        return f"the {'integer' if isinstance(value, int) else 'number'} {value!r}"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "nothing (null)"
    return {"list": "a list", "dict": "a mapping"}.get(
        type(value).__name__, f"a {type(value).__name__}"
    )


def param_number_problems(template: Any, params: Mapping[str, Any]) -> list[str]:
    """Numeric step fields built from params only (``click_count: "${clicks}"``), checked as soon
    as the params are known — the producer refuses the run before anything is enqueued. Fields
    that also read ``${outputs…}``, ``${loop…}`` or ``${run…}`` are checked when the step runs."""
    problems: list[str] = []
    for index, step in enumerate(template.iter_steps()):
        if not hasattr(step, "action") or not hasattr(step, "model_dump"):
            continue
        data = step.model_dump(exclude_unset=True)
        for field, raw in data.items():
            if field in NOT_INTERPOLATED or not _number_reference(raw):
                continue
            try:
                trial = {**data, field: render(raw, params)}
                type(step).model_validate(trial)
            except StepFailed:
                continue  # a reference the params do not hold: the runner says so
            except ValidationError as exc:
                where = getattr(step, "id", None) or f"#{index}"
                problems += [
                    f"step {where} ({step.action}) {_rendered_problem(err, data, trial)}"
                    for err in exc.errors(include_url=False)
                    if err["loc"] and err["loc"][0] == field and err["loc"][-1] == NUMBER_TAG
                ]
    return problems


def _number_reference(raw: Any) -> bool:
    """A field written as text with references to params alone (a number's reference form)."""
    if not isinstance(raw, str) or not has_references(raw):
        return False
    return not {name.split(".")[0] for name in references(raw)} & {"outputs", "loop", "run"}
