"""The template schema: pydantic models for the YAML a template author writes.

Every model forbids unknown keys, so a typo (``selectr:``) is an error instead of a silently
ignored field. Rules that only involve one step (``exactly one of pixels/selector/to``) live here;
rules that need the whole template (references, duplicate ids, domains, limits) live in
:mod:`browserq.templates.checks`, which the loader runs on the raw YAML so that every problem is
reported at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from browserq.templates.params import ParamValueError, coerce_value, show
from browserq.templates.regex import regex_problem

SLUG = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
#: Each part at most 9 digits (CalVer's 20261201 fits): the store keeps versions in 100 chars.
SEMVER = re.compile(r"^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})$")
#: Longest template name (the store keeps names in 200 chars).
MAX_NAME_LENGTH = 100
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
STEP_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
#: Scope names a param cannot take, because ``${outputs...}`` etc. mean something else.
RESERVED_NAMES = frozenset({"outputs", "loop", "run"})
#: Step fields that are names, never rendered with ``${...}``.
NOT_INTERPOLATED = frozenset({"id", "action", "into"})


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


def _text_or_texts(value: Any) -> Any:
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


def _repeat_max(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(
            f"repeat max must be an integer or a ${{param}} reference, got {show(value)}"
        )
    return value


Text = Annotated[str, BeforeValidator(_scalar_text)]
Selector = Annotated[str, Field(min_length=1)]
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

RunSeconds = Annotated[float, Field(gt=0, le=MAX_RUN_TIMEOUT_S)]
StepSeconds = Annotated[float, Field(gt=0, le=MAX_STEP_TIMEOUT_S)]
Retries = Annotated[int, Field(ge=0, le=MAX_RETRIES)]


def _exactly_one(model: BaseModel, names: Sequence[str], what: str) -> None:
    given = [name for name in names if getattr(model, name) is not None]
    if len(given) != 1:
        got = f"; got {', '.join(given)}" if given else ""
        raise ValueError(f"{what} needs exactly one of {', '.join(names)}{got}")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- params and settings -------------------------------------------------------------------


class ParamSpec(_Model):
    """One declared run parameter. Its own default must satisfy it."""

    type: Literal["bool", "email", "enum", "float", "int", "list", "secret", "string", "url"]
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
            if self.type == "secret":
                problems.append("a secret param cannot have a default; pass secrets at run time")
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


def _host_entry(value: str) -> str:
    host = value.strip().lower()
    if not host or re.search(r"[/:@\s?#\\]", host):
        raise ValueError(
            f"allowed_domains entry {value!r} must be a bare host name such as quotes.example "
            "(no scheme, port or path)"
        )
    return host


def _trace_flag(value: Any) -> Any:
    # YAML 1.1 reads an unquoted ``off`` as False.
    return "off" if value is False else value


class TemplateSettings(_Model):
    """Per-template limits and policies."""

    timeout_s: RunSeconds = 120.0
    step_timeout_s: StepSeconds = 30.0
    allowed_domains: list[Annotated[str, AfterValidator(_host_entry)]] = Field(default_factory=list)
    trace: Annotated[Literal["on_failure", "always", "off"], BeforeValidator(_trace_flag)] = (
        "on_failure"
    )
    allow_eval: bool = False
    step_retries: Retries | None = None
    #: Retries of the whole run (from its last checkpoint, fresh context) for run-level errors.
    run_retries: Retries | None = None
    #: ``auto``: also checkpoint after every step that lands on a new URL; ``explicit``: only
    #: steps marked ``checkpoint: true`` (and side effects, which always checkpoint).
    checkpoints: Literal["auto", "explicit"] = "auto"
    #: Derive an idempotency key from the params, e.g. ``"order-${order_id}"``: a second submit
    #: with the same key joins the first run instead of starting another.
    idempotency_key: str | None = None
    #: Per-domain rates for this template's runs, overriding BROWSERQ_RATE_LIMITS:
    #: ``{"example.com": "2/s", "*": "10/s"}``. Shared by every worker.
    rate_limits: dict[str, str] = Field(default_factory=dict)
    #: Move the mouse along curved paths and type with human cadence (slower; for picky sites).
    human_input: bool = False
    #: Resource types to abort in this template's runs (image, font, media, stylesheet).
    block_resources: list[str] = Field(default_factory=list)
    #: ``open``: documents (navigations, redirects, iframes, popups) to hosts outside
    #: allowed_domains are blocked before they are sent; ``strict``: every request is (images,
    #: scripts, fetch/XHR, beacons, WebSockets). Needs allowed_domains.
    network: Literal["open", "strict"] = "open"

    @field_validator("rate_limits")
    @classmethod
    def _valid_rates(cls, value: dict[str, str]) -> dict[str, str]:
        from browserq.limits import parse_rate_map

        return parse_rate_map(value) if value else value

    @model_validator(mode="after")
    def _strict_needs_domains(self) -> TemplateSettings:
        if self.network == "strict" and not self.allowed_domains:
            raise ValueError(
                "network: strict blocks requests to hosts outside allowed_domains, "
                "but allowed_domains is empty: list the hosts the template may reach"
            )
        return self

    @field_validator("block_resources")
    @classmethod
    def _valid_kinds(cls, value: list[str]) -> list[str]:
        from browserq.limits import validate_block_kinds

        return sorted(validate_block_kinds(value)) if value else value


# --- steps ---------------------------------------------------------------------------------


class Postcondition(_Model):
    """How to tell that a side effect happened: probed when its outcome is unknown after a crash.

    ``url`` (optional) is opened first; then every given check must hold.
    """

    url: str | None = None
    selector: Selector | None = None
    text: Text | None = None
    url_matches: str | None = None

    @model_validator(mode="after")
    def _something_to_check(self) -> Postcondition:
        if self.selector is None and self.text is None and self.url_matches is None:
            raise ValueError("postcondition needs at least one of selector, text, url_matches")
        return self


class ActionStep(_Model):
    """Fields every action step has; subclasses pin ``action`` and add their own."""

    COMMON_FIELDS: ClassVar[tuple[str, ...]] = (
        "id",
        "action",
        "optional",
        "timeout_s",
        "retries",
        "description",
        "continue_on_error",
        "checkpoint",
        "side_effect",
        "postcondition",
        "on_unknown",
    )

    id: StepId | None = None
    action: str
    optional: bool = False
    timeout_s: StepSeconds | None = None
    retries: Retries | None = None
    description: str | None = None
    #: Record the failure and go on with the next step instead of failing the run.
    continue_on_error: bool = False
    #: Save a checkpoint after this step: a resumed run continues from here.
    checkpoint: bool = False
    #: This step changes the world (submit, pay, send): never re-executed blindly.
    side_effect: bool = False
    postcondition: Postcondition | None = None
    #: What to do when a side effect's outcome is unknown and its postcondition does not hold:
    #: ``needs_review`` (default) stops the run for a person; ``retry`` says it is safe to repeat.
    on_unknown: Literal["needs_review", "retry"] = "needs_review"

    @model_validator(mode="after")
    def _side_effect_fields(self) -> ActionStep:
        if not self.side_effect and (self.postcondition is not None or self.on_unknown != "needs_review"):
            raise ValueError("postcondition and on_unknown only apply to steps with side_effect: true")
        return self

    @classmethod
    def own_fields(cls) -> list[str]:
        """The action-specific fields (for messages listing what is allowed)."""
        return [name for name in cls.model_fields if name not in cls.COMMON_FIELDS]


class NavigateStep(ActionStep):
    action: Literal["navigate"] = "navigate"
    url: str
    wait_until: Literal["load", "domcontentloaded", "networkidle", "commit"] = "load"
    #: Store ``{"status": HTTP status, "url": the URL after redirects}`` in ``outputs[into]``.
    into: OutputName | None = None


class ClickStep(ActionStep):
    action: Literal["click"] = "click"
    selector: Selector
    button: Literal["left", "right", "middle"] = "left"
    click_count: Annotated[int, Field(ge=1, le=MAX_CLICK_COUNT)] = 1


class FillStep(ActionStep):
    action: Literal["fill"] = "fill"
    selector: Selector
    value: Text


class TypeStep(ActionStep):
    action: Literal["type"] = "type"
    selector: Selector
    text: Text
    delay_ms: Annotated[int, Field(ge=0, le=MAX_KEY_DELAY_MS)] = 0


class SelectStep(ActionStep):
    action: Literal["select"] = "select"
    selector: Selector
    value: Annotated[str | list[str], BeforeValidator(_text_or_texts)]
    by: Literal["value", "label"] = "value"
    #: Store the list of option values now selected in ``outputs[into]``.
    into: OutputName | None = None


class CheckStep(ActionStep):
    action: Literal["check"] = "check"
    selector: Selector


class UncheckStep(ActionStep):
    action: Literal["uncheck"] = "uncheck"
    selector: Selector


class PressStep(ActionStep):
    action: Literal["press"] = "press"
    key: Annotated[Text, Field(min_length=1)]
    selector: Selector | None = None


class HoverStep(ActionStep):
    action: Literal["hover"] = "hover"
    selector: Selector


class ScrollStep(ActionStep):
    """Scroll by pixels, to an element or to top/bottom; ``settle_ms`` lets lazy content load."""

    action: Literal["scroll"] = "scroll"
    pixels: Annotated[int, Field(ge=-MAX_SCROLL_PIXELS, le=MAX_SCROLL_PIXELS)] | None = None
    selector: Selector | None = None
    #: Store ``{"height": page height, "grew": whether it grew}`` in ``outputs[into]``.
    into: OutputName | None = None
    to: Literal["bottom", "top"] | None = None
    settle_ms: Annotated[int, Field(ge=0, le=MAX_SETTLE_MS)] = 500

    @model_validator(mode="after")
    def _one_target(self) -> ScrollStep:
        _exactly_one(self, ("pixels", "selector", "to"), "scroll")
        return self


class WaitStep(ActionStep):
    """Wait for an element state, a URL (glob, or regex after ``re:``), a load state or a time."""

    action: Literal["wait"] = "wait"
    selector: Selector | None = None
    state: Literal["attached", "detached", "visible", "hidden"] = "visible"
    url: str | None = None
    load_state: Literal["load", "domcontentloaded", "networkidle"] | None = None
    ms: Annotated[int, Field(ge=0, le=MAX_WAIT_MS)] | None = None

    @model_validator(mode="after")
    def _one_condition(self) -> WaitStep:
        _exactly_one(self, ("selector", "url", "load_state", "ms"), "wait")
        # judged by value, not by fields_set: a model_dump() round trip includes the default
        if self.state != "visible" and self.selector is None:
            raise ValueError("wait: state only applies together with selector")
        return self


class FieldSpec(_Model):
    """One extracted field. ``selector`` None means the matched element itself."""

    selector: Selector | None = None
    attr: str | None = None
    html: bool = False
    all: bool = False

    @model_validator(mode="after")
    def _attr_or_html(self) -> FieldSpec:
        if self.attr is not None and self.html:
            raise ValueError("a field takes either attr or html, not both")
        return self


class ExtractStep(ActionStep):
    """Collect one record per element matching ``selector`` into ``outputs[into]``.

    Without ``fields`` each record is the element's text. A bare string field is a sub-selector
    whose text is taken; it is stored as ``FieldSpec(selector=...)``.
    """

    action: Literal["extract"] = "extract"
    selector: Selector
    fields: Annotated[dict[str, FieldSpec], Field(min_length=1)] | None = None
    into: OutputName
    limit: Annotated[int, Field(ge=1, le=MAX_EXTRACT_LIMIT)] | None = None
    allow_empty: bool = False

    @field_validator("fields", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: {"selector": v} if isinstance(v, str) else v for k, v in value.items()}
        return value


_GET_NEEDS_SELECTOR = ("text", "attribute", "count", "html", "value")


class GetStep(ActionStep):
    """Read one value from the page into ``outputs[into]``; ``what`` defaults to the text."""

    action: Literal["get"] = "get"
    what: Literal["text", "attribute", "url", "title", "count", "html", "value"] = "text"
    selector: Selector | None = None
    attribute: str | None = None
    into: OutputName

    @model_validator(mode="after")
    def _arguments(self) -> GetStep:
        if self.what in _GET_NEEDS_SELECTOR and self.selector is None:
            default = " (what defaults to text)" if "what" not in self.model_fields_set else ""
            raise ValueError(f"get: what: {self.what} needs a selector{default}")
        if self.what not in _GET_NEEDS_SELECTOR and self.selector is not None:
            raise ValueError(f"get: what: {self.what} takes no selector")
        if self.what == "attribute" and not self.attribute:
            raise ValueError("get: what: attribute needs an attribute name")
        if self.what != "attribute" and self.attribute is not None:
            raise ValueError("get: attribute only applies with what: attribute")
        return self


class EvalStep(ActionStep):
    """Run JavaScript in the page; only allowed when ``settings.allow_eval`` is true."""

    action: Literal["eval"] = "eval"
    expression: Annotated[str, Field(min_length=1)]
    into: OutputName | None = None


class ScreenshotStep(ActionStep):
    """``name`` is relative to the run's artifact folder; default: derived from the step."""

    action: Literal["screenshot"] = "screenshot"
    name: str | None = None
    full_page: bool = False
    selector: Selector | None = None
    #: Store ``{"artifact": path inside the artifacts dir, "size": bytes}`` in ``outputs[into]``.
    into: OutputName | None = None

    @model_validator(mode="after")
    def _page_or_element(self) -> ScreenshotStep:
        if self.full_page and self.selector is not None:
            raise ValueError("screenshot: full_page cannot be combined with selector")
        return self


class AssertStep(ActionStep):
    """Fail the run unless an element exists (or not), a text is present, or the URL matches."""

    action: Literal["assert"] = "assert"
    selector: Selector | None = None
    exists: bool = True
    text: Text | None = None
    within: Selector | None = None
    url: str | None = None
    message: str | None = None

    @model_validator(mode="after")
    def _one_condition(self) -> AssertStep:
        _exactly_one(self, ("selector", "text", "url"), "assert")
        if self.exists is not True and self.selector is None:
            raise ValueError("assert: exists only applies together with selector")
        if self.within is not None and self.text is None:
            raise ValueError("assert: within only applies together with text")
        return self


class RepeatSpec(_Model):
    """A bounded loop. ``max`` is an int or ``${param}`` of an int param with its own max."""

    max: Annotated[int | str, BeforeValidator(_repeat_max)]
    until_missing: Selector | None = None
    while_present: Selector | None = None
    steps: Annotated[list[Step], Field(min_length=1)]

    @model_validator(mode="after")
    def _one_stop_condition(self) -> RepeatSpec:
        if self.until_missing is not None and self.while_present is not None:
            raise ValueError("repeat takes at most one of until_missing and while_present")
        return self


class RepeatStep(_Model):
    """Runs ``repeat.steps`` up to ``repeat.max`` times."""

    id: StepId | None = None
    description: str | None = None
    repeat: RepeatSpec


ACTION_CLASSES: tuple[type[ActionStep], ...] = (
    NavigateStep,
    ClickStep,
    FillStep,
    TypeStep,
    SelectStep,
    CheckStep,
    UncheckStep,
    PressStep,
    HoverStep,
    ScrollStep,
    WaitStep,
    ExtractStep,
    GetStep,
    EvalStep,
    ScreenshotStep,
    AssertStep,
)
#: Action name → step class.
ACTIONS: dict[str, type[ActionStep]] = {
    cls.model_fields["action"].default: cls for cls in ACTION_CLASSES
}


ACTION_REPEAT = "action: repeat"


def step_tag(value: Any) -> str | None:
    """Which union member a step entry is: ``repeat`` if it has that key, else its action."""
    if isinstance(value, dict):
        if "repeat" in value:
            return "repeat"
        action = value.get("action")
        if action == "repeat":
            return ACTION_REPEAT  # not a member tag: a repeat is written ``- repeat: {...}``
        return action if isinstance(action, str) else None
    if isinstance(value, RepeatStep):
        return "repeat"
    if isinstance(value, ActionStep):
        return value.action
    return None


Step = Annotated[
    Union[  # noqa: UP007 - tagged members read better as a Union
        Annotated[NavigateStep, Tag("navigate")],
        Annotated[ClickStep, Tag("click")],
        Annotated[FillStep, Tag("fill")],
        Annotated[TypeStep, Tag("type")],
        Annotated[SelectStep, Tag("select")],
        Annotated[CheckStep, Tag("check")],
        Annotated[UncheckStep, Tag("uncheck")],
        Annotated[PressStep, Tag("press")],
        Annotated[HoverStep, Tag("hover")],
        Annotated[ScrollStep, Tag("scroll")],
        Annotated[WaitStep, Tag("wait")],
        Annotated[ExtractStep, Tag("extract")],
        Annotated[GetStep, Tag("get")],
        Annotated[EvalStep, Tag("eval")],
        Annotated[ScreenshotStep, Tag("screenshot")],
        Annotated[AssertStep, Tag("assert")],
        Annotated[RepeatStep, Tag("repeat")],
    ],
    Discriminator(step_tag),
]
STEP_TAGS = frozenset(ACTIONS) | {"repeat"}

RepeatSpec.model_rebuild()
RepeatStep.model_rebuild()


def _semver(value: Any) -> Any:
    if not isinstance(value, str) or not SEMVER.match(value):
        raise ValueError(
            f"version must be a semantic version MAJOR.MINOR.PATCH such as 1.2.0 (each part at "
            f"most 9 digits), got {show(value)}"
            + (" (quote it in YAML)" if isinstance(value, int | float) else "")
        )
    return value


def _slug(value: str) -> str:
    if len(value) > MAX_NAME_LENGTH:
        raise ValueError(f"name is {len(value)} characters long; the limit is {MAX_NAME_LENGTH}")
    if not SLUG.match(value):
        raise ValueError(
            f"name {value!r} must be lower-case letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return value


def _none_to_empty(value: Any) -> Any:
    return {} if value is None else value


def iter_steps(steps: Sequence[ActionStep | RepeatStep]) -> Iterator[ActionStep | RepeatStep]:
    """Every step in document order, descending into repeats (the repeat comes first)."""
    for step in steps:
        yield step
        if isinstance(step, RepeatStep):
            yield from iter_steps(step.repeat.steps)


class SessionSpec(_Model):
    """How to tell a run is logged in, and how to log in again when it is not.

    When a step fails and ``check`` matches nothing, the ``login`` steps run and the failed step
    is tried once more; if the check still fails, the run fails with ``SESSION_EXPIRED``.
    """

    check: Selector
    login: Annotated[list[Step], Field(min_length=1)]


class Template(_Model):
    """A whole template: identity, params, settings and the steps to run."""

    name: Annotated[str, AfterValidator(_slug)]
    version: Annotated[str, BeforeValidator(_semver)]
    description: str | None = None
    params: Annotated[dict[ParamName, ParamSpec], BeforeValidator(_none_to_empty)] = Field(
        default_factory=dict
    )
    settings: Annotated[TemplateSettings, BeforeValidator(_none_to_empty)] = Field(
        default_factory=TemplateSettings
    )
    steps: Annotated[list[Step], Field(min_length=1)]
    session: SessionSpec | None = None

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    def iter_steps(self) -> Iterator[ActionStep | RepeatStep]:
        """Every step, nested ones included, in document order (the session's login steps last)."""
        yield from iter_steps(self.steps)
        if self.session is not None:
            yield from iter_steps(self.session.login)
