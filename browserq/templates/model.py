"""The template schema: pydantic models for the YAML a template author writes.

The schema is split by what it describes, each part importing only the ones below it:

* :mod:`~browserq.templates.fields` — field types, name rules, the bound of every number;
* :mod:`~browserq.templates.steps` — one model per action, repeats, the ``Step`` union;
* :mod:`~browserq.templates.settings_model` — the ``settings:`` block;
* this module — a param's declaration, the session and the :class:`Template` itself.

Every model forbids unknown keys, so a typo (``selectr:``) is an error instead of a silently
ignored field. Rules that only involve one step live with the step; rules that need the whole
template (references, duplicate ids, domains, limits) live in :mod:`browserq.templates.checks`,
which the loader runs on the raw YAML so that every problem is reported at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from browserq.templates.fields import (
    Number,
    ParamName,
    Selector,
    StrictModel,
    none_to_empty,
    valid_name,
    valid_version,
)
from browserq.templates.handoff import HandoffTrigger, human_wait_budget_s
from browserq.templates.params import ParamValueError, coerce_value, show
from browserq.templates.regex import regex_problem
from browserq.templates.settings_model import TemplateSettings
from browserq.templates.steps import (
    ActionStep,
    RepeatStep,
    Step,
    iter_steps,
)


class ParamSpec(StrictModel):
    """One declared run parameter. Its own default must satisfy it."""

    type: Literal["bool", "email", "enum", "file", "float", "int", "list", "secret", "string", "url"]
    required: bool = False
    default: Any = None
    description: str | None = None
    min: Number | None = None
    max: Number | None = None
    pattern: str | None = None
    choices: list[Any] | None = None
    items: Literal["bool", "float", "int", "string"] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ParamSpec:
        problems: list[str] = []
        bounded = self.min is not None or self.max is not None
        if bounded and self.type not in ("int", "float", "list"):
            problems.append("min/max only apply to int, float and list params")
        if self.min is not None and self.max is not None and self.min > self.max:
            problems.append(f"min {self.min} is greater than max {self.max}")
        if self.pattern is not None:
            if self.type not in ("string", "secret"):
                problems.append("pattern only applies to string and secret params")
            else:
                problem = regex_problem(self.pattern)
                if problem:
                    problems.append(f"invalid regex pattern {self.pattern!r}: {problem}")
        if self.type == "enum" and not self.choices:
            problems.append("an enum param needs a non-empty choices list")
        if self.choices is not None and self.type != "enum":
            problems.append("choices only apply to enum params")
        if self.choices and not all(isinstance(c, str | int | float | bool) for c in self.choices):
            problems.append("enum choices must be strings, numbers or booleans")
        if self.items is not None and self.type != "list":
            problems.append("items only applies to list params")
        if self.default is not None:
            if self.type in ("secret", "file"):
                problems.append(f"a {self.type} param cannot have a default; pass it at run time")
            elif self.required:
                problems.append("a required param cannot have a default")
            elif not problems:
                try:
                    self.__dict__["default"] = coerce_value(self, self.default)
                except ParamValueError as exc:
                    problems.append(f"default {show(self.default)} is invalid: {exc}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class SessionSpec(StrictModel):
    """How to tell a run is logged in, and how to log in again when it is not.

    When a step fails and ``check`` matches nothing, the ``login`` steps run and the failed step
    is tried once more; if the check still fails, the run fails with ``SESSION_EXPIRED``.
    """

    check: Selector
    login: Annotated[list[Step], Field(min_length=1)]


class Template(StrictModel):
    """A whole template: identity, params, settings and the steps to run."""

    name: Annotated[str, AfterValidator(valid_name)]
    version: Annotated[str, BeforeValidator(valid_version)]
    description: str | None = None
    params: Annotated[dict[ParamName, ParamSpec], BeforeValidator(none_to_empty)] = Field(
        default_factory=dict
    )
    settings: Annotated[TemplateSettings, BeforeValidator(none_to_empty)] = Field(
        default_factory=TemplateSettings
    )
    steps: Annotated[list[Step], Field(min_length=1)]
    session: SessionSpec | None = None
    #: Wait for a person whenever a step that navigated lands on a page showing ``when_present``.
    handoff: HandoffTrigger | None = None

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def human_wait_s(self) -> float:
        """The run's handoff budget: the most it may wait for people in all (0: never)."""
        return human_wait_budget_s(
            (s for s in self.iter_steps() if isinstance(s, ActionStep)), self.handoff
        )

    def iter_steps(self) -> Iterator[ActionStep | RepeatStep]:
        """Every step, nested ones included, in document order (the session's login steps last)."""
        yield from iter_steps(self.steps)
        if self.session is not None:
            yield from iter_steps(self.session.login)


__all__ = ["ParamSpec", "SessionSpec", "Template"]
