"""The schema's building blocks: field types, name rules and the bounds of every number.

Every number a template hands the browser is bounded here (``MAX_*``), so a template cannot ask
for a billion clicks or a four-day wait. The step, settings and template models
(:mod:`~browserq.templates.steps`, :mod:`~browserq.templates.settings_model`,
:mod:`~browserq.templates.model`) are built from these types on :class:`StrictModel`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
)

from browserq.templates.interpolate import NUMBER_TAG, REFERENCE_TAG, number_form
from browserq.templates.locators import Selector  # noqa: F401 (re-exported: steps import it from here)
from browserq.templates.params import show

SLUG = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
#: Each part at most 9 digits (CalVer's 20261201 fits): the store keeps versions in 100 chars.
SEMVER = re.compile(r"^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})$")
#: Longest template name (the store keeps names in 200 chars).
MAX_NAME_LENGTH = 100
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
STEP_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
#: Scope names a param cannot take, because ``${outputs...}`` etc. mean something else.
RESERVED_NAMES = frozenset({"outputs", "loop", "run"})


def version_tuple(version: str) -> tuple[int, int, int]:
    """``"1.10.0"`` → ``(1, 10, 0)``, so versions sort numerically."""
    major, minor, patch = (int(part) for part in version.split("."))
    return major, minor, patch


# --- field types ---------------------------------------------------------------------------


def _scalar_text(value: Any) -> Any:
    """YAML turns ``value: 42`` into an int; fields that are typed text take it as "42"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def text_or_texts(value: Any) -> Any:
    """A ``select`` value: one text or a list of texts (numbers taken as their text)."""
    if isinstance(value, list):
        if not all(isinstance(v, str | int | float) for v in value):
            raise ValueError("expected a string or a list of strings")
        return [_scalar_text(v) for v in value]
    value = _scalar_text(value)
    if not isinstance(value, str):
        # pydantic turns ValueError (not TypeError) into a validation error
        raise ValueError("expected a string or a list of strings")
    return value


def _output_name(value: str) -> str:
    if not IDENTIFIER.match(value):
        raise ValueError(
            f"into name {value!r} must be letters, digits and '_' (not starting with a digit), "
            "since it is read back as ${outputs.NAME}"
        )
    return value


def _step_id(value: str) -> str:
    if not STEP_ID.match(value):
        raise ValueError(f"step id {value!r} must be letters, digits, '_', '-' or '.'")
    return value


def _param_name(value: str) -> str:
    if not IDENTIFIER.match(value):
        raise ValueError(
            f"param name {value!r} must be letters, digits and '_' (not starting with a digit)"
        )
    if value in RESERVED_NAMES:
        raise ValueError(f"param name {value!r} is reserved (outputs, loop and run are scopes)")
    return value


def _number(value: Any) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ValueError(f"expected a number, got {show(value)}")
    return value


def repeat_max(value: Any) -> Any:
    """``repeat.max`` before validation: an int, or a ``${param}`` resolved at run time."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(
            f"repeat max must be an integer or a ${{param}} reference, got {show(value)}"
        )
    return value


Text = Annotated[str, BeforeValidator(_scalar_text)]
OutputName = Annotated[str, AfterValidator(_output_name)]
StepId = Annotated[str, AfterValidator(_step_id)]
ParamName = Annotated[str, AfterValidator(_param_name)]
Number = Annotated[int | float, BeforeValidator(_number)]
PositiveSeconds = Annotated[float, Field(gt=0)]

# --- limits: every number a template gives the browser is bounded ------------------------------
#: A run longer than this would outlive Redis's visibility timeout (6 h) and most proxies.
MAX_RUN_TIMEOUT_S = 4 * 3600.0
#: One step may wait this long (matches the longest ``wait: {ms}``).
MAX_STEP_TIMEOUT_S = 600.0
MAX_RETRIES = 10
#: Triple-click is what people use; Playwright sends every click as real input events.
MAX_CLICK_COUNT = 10
MAX_KEY_DELAY_MS = 5_000
MAX_SCROLL_PIXELS = 1_000_000
MAX_SETTLE_MS = 60_000
MAX_WAIT_MS = 600_000
MAX_EXTRACT_LIMIT = 100_000

_Number = TypeVar("_Number")
#: A numeric step field that may be ``${param}`` (or any text with a reference): kept as text at
#: load, it is checked with the number's own bounds once rendered — the runner re-validates every
#: rendered step (:func:`browserq.templates.interpolate.render_step`). ``Interpolable[Annotated[int,
#: Field(ge=1)]]``: the number's form, or text.
Interpolable = Annotated[
    Annotated[_Number, Tag(NUMBER_TAG)] | Annotated[str, Tag(REFERENCE_TAG)],
    Discriminator(number_form),
]


RunSeconds = Annotated[float, Field(gt=0, le=MAX_RUN_TIMEOUT_S)]
StepSeconds = Annotated[float, Field(gt=0, le=MAX_STEP_TIMEOUT_S)]
Retries = Annotated[int, Field(ge=0, le=MAX_RETRIES)]


def exactly_one(model: BaseModel, names: Sequence[str], what: str) -> None:
    """A model validator's check: exactly one of ``names`` is given (``what`` names the step)."""
    given = [name for name in names if getattr(model, name) is not None]
    if len(given) != 1:
        got = f"; got {', '.join(given)}" if given else ""
        raise ValueError(f"{what} needs exactly one of {', '.join(names)}{got}")


class StrictModel(BaseModel):
    """Every schema model: unknown keys are refused, so a typo (``selectr:``) is an error
    instead of a silently ignored field; frozen, since loaded templates are shared."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --- the template's own fields -------------------------------------------------------------------
def valid_version(value: Any) -> Any:
    """``version:`` must be MAJOR.MINOR.PATCH (YAML reads an unquoted ``1.2`` as a number)."""
    if not isinstance(value, str) or not SEMVER.match(value):
        raise ValueError(
            f"version must be a semantic version MAJOR.MINOR.PATCH such as 1.2.0 (each part at "
            f"most 9 digits), got {show(value)}"
            + (" (quote it in YAML)" if isinstance(value, int | float) else "")
        )
    return value


def valid_name(value: str) -> str:
    """``name:`` is a slug the store and references can hold."""
    if len(value) > MAX_NAME_LENGTH:
        raise ValueError(f"name is {len(value)} characters long; the limit is {MAX_NAME_LENGTH}")
    if not SLUG.match(value):
        raise ValueError(
            f"name {value!r} must be lower-case letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return value


#: A Celery queue name every broker takes: RabbitMQ reserves ``amq.*``; the store keeps 200 chars.
QUEUE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$")
MAX_QUEUE_NAME_LENGTH = 200


def queue_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a queue name (a template's ``queue:``, ``--queue``), or None."""
    if not isinstance(value, str):
        return f"queue must be a string, got {show(value)}"
    if len(value) > MAX_QUEUE_NAME_LENGTH:
        return f"queue name is {len(value)} characters long; the limit is {MAX_QUEUE_NAME_LENGTH}"
    if not QUEUE_NAME.match(value) or value.startswith("amq."):
        return (f"queue {show(value)} must be letters, digits and _ . : @ - (starting with a letter "
                "or digit, not amq.)")
    return None


def valid_queue(value: str) -> str:
    problem = queue_problem(value)
    if problem:
        raise ValueError(problem)
    return value


QueueName = Annotated[str, AfterValidator(valid_queue)]


def none_to_empty(value: Any) -> Any:
    """An empty YAML block (``params:`` with nothing under it) means an empty mapping."""
    return {} if value is None else value
