"""Selectors as mappings: ``{role: button, name: "Send"}`` and the other Playwright locators.

A selector is either a string (CSS, ``text=``, ``xpath=``, any Playwright selector engine,
``>>>`` into iframes) or a :class:`LocatorSpec` mapping that mirrors Playwright's ``get_by_*``
locators, which follow what a visitor sees (roles and accessible names, labels, placeholders)
rather than the page's markup. The mapping is checked when the template loads, so a typo in a
key or a role is a load error naming the step, not a step that times out at run time.
:func:`selector_text` is how every message shows a selector (``role=button[name="Send"]``).
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from browserq.templates.params import describe

#: The ARIA roles Playwright 1.65's ``get_by_role`` takes (its ``role`` Literal; a test checks
#: that they are the same, so a Playwright upgrade that adds one says so).
AriaRole = Literal[
    "alert", "alertdialog", "application", "article", "banner", "blockquote", "button", "caption",
    "cell", "checkbox", "code", "columnheader", "combobox", "complementary", "contentinfo",
    "definition", "deletion", "dialog", "directory", "document", "emphasis", "feed", "figure",
    "form", "generic", "grid", "gridcell", "group", "heading", "img", "insertion", "link", "list",
    "listbox", "listitem", "log", "main", "marquee", "math", "menu", "menubar", "menuitem",
    "menuitemcheckbox", "menuitemradio", "meter", "navigation", "none", "note", "option",
    "paragraph", "presentation", "progressbar", "radio", "radiogroup", "region", "row",
    "rowgroup", "rowheader", "scrollbar", "search", "searchbox", "separator", "slider",
    "spinbutton", "status", "strong", "subscript", "superscript", "switch", "tab", "table",
    "tablist", "tabpanel", "term", "textbox", "time", "timer", "toolbar", "tooltip", "tree",
    "treegrid", "treeitem",
]
ARIA_ROLES: tuple[str, ...] = get_args(AriaRole)
#: What a locator finds by: exactly one of these per mapping.
TARGETS: tuple[str, ...] = ("role", "label", "text", "placeholder", "test_id", "alt", "title", "css")
#: ``get_by_role``'s filters: only with ``role``.
ROLE_OPTIONS: tuple[str, ...] = (
    "name", "level", "checked", "disabled", "expanded", "pressed", "selected", "include_hidden",
)
#: ``exact`` (whole text, case-sensitive) applies to these; test ids and CSS are always exact.
EXACT_APPLIES: tuple[str, ...] = ("role", "label", "text", "placeholder", "alt", "title")
#: The largest ``nth``: a template indexing past this is almost certainly wrong.
MAX_NTH = 10_000


def _text(value: Any) -> Any:
    """YAML reads ``name: 42`` as a number; a locator's texts take it as "42"."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _nth(value: Any) -> Any:
    """``nth``: an integer (``-1`` is the last match), or a ``${...}`` resolved at run time."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, str) and "${" in value:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(
            f"nth must be an integer (0 is the first match, -1 the last) or a ${{param}} reference, "
            f"got {value!r}"
        )
    if not -1 <= value <= MAX_NTH:
        raise ValueError(f"nth must be between -1 (the last match) and {MAX_NTH}, got {value}")
    return value


LocatorText = Annotated[str, BeforeValidator(_text), Field(min_length=1)]
Nth = Annotated[int | str, BeforeValidator(_nth)]


class LocatorSpec(BaseModel):
    """One Playwright locator, as a template writes it.

    Exactly one target (:data:`TARGETS`) says what to find; ``name``/``level``/``checked``…
    narrow a ``role``; ``exact`` asks for the whole text, case-sensitive; ``within`` scopes the
    search to a parent (any selector); ``nth`` picks one match (0-based, -1 the last).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    KEYS: ClassVar[tuple[str, ...]] = (*TARGETS, *ROLE_OPTIONS, "exact", "nth", "within")

    role: str | None = None
    label: LocatorText | None = None
    text: LocatorText | None = None
    placeholder: LocatorText | None = None
    test_id: LocatorText | None = None
    alt: LocatorText | None = None
    title: LocatorText | None = None
    css: LocatorText | None = None
    name: LocatorText | None = None
    exact: bool | None = None
    level: Annotated[int, Field(ge=1, le=6)] | None = None
    checked: bool | None = None
    disabled: bool | None = None
    expanded: bool | None = None
    pressed: bool | None = None
    selected: bool | None = None
    include_hidden: bool | None = None
    nth: Nth | None = None
    within: Selector | None = None

    @model_validator(mode="after")
    def _consistent(self) -> LocatorSpec:
        given = [key for key in TARGETS if getattr(self, key) is not None]
        if len(given) != 1:
            got = f"; got {', '.join(given)}" if given else ""
            raise ValueError(f"a locator needs exactly one of {', '.join(TARGETS)}{got}")
        target = given[0]
        if target == "role":
            _check_role(str(self.role))
        else:
            extra = [key for key in ROLE_OPTIONS if getattr(self, key) is not None]
            if extra:
                hint = " (to find by visible text, use text:)" if "name" in extra else ""
                raise ValueError(f"{', '.join(extra)} only applies together with role{hint}")
        if self.exact is not None and target not in EXACT_APPLIES:
            raise ValueError(f"exact does not apply to {target} (it always matches exactly)")
        return self

    @property
    def target(self) -> str:
        """Which of :data:`TARGETS` this locator finds by."""
        return next(key for key in TARGETS if getattr(self, key) is not None)

    def __str__(self) -> str:
        return selector_text(self)

    def __repr__(self) -> str:  # messages write ``{selector!r}``: the readable form, not the model
        return selector_text(self)


def _check_role(role: str) -> None:
    if "${" in role or role in ARIA_ROLES:
        return  # a reference is checked once it is resolved (the step is validated again)
    close = difflib.get_close_matches(role, ARIA_ROLES, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'?" if close else f"valid roles: {', '.join(ARIA_ROLES)}"
    raise ValueError(f"unknown ARIA role {role!r} ({hint})")


#: Why a template cannot aim at a session's ref.
REF_IN_TEMPLATE = (
    "a ref (from a session's snapshot, [ref=…]) only means something in the live session that "
    "issued it, and goes stale when the page changes; a template aims with selector: CSS, text=…, "
    "or a locator mapping such as {role: button, name: Send}"
)
#: A selector naming a ref: browserq's ``ref=`` or Playwright's ``aria-ref=`` (also after ``>>``).
_REF_SELECTOR = re.compile(r"^\s*ref\s*=|(?:^|>>)\s*aria-ref\s*=")


def session_only_problem(value: Any) -> str | None:
    """Why a selector cannot be used outside a live session (it names a ref), or None."""
    if isinstance(value, str) and _REF_SELECTOR.search(value):
        return f"selector {value!r}: {REF_IN_TEMPLATE}"
    if isinstance(value, dict) and "ref" in value:
        return f"ref in a locator mapping: {REF_IN_TEMPLATE}"
    return None


def _key_problem(err: Any) -> str:
    """One pydantic error inside a locator mapping, phrased for an author."""
    loc = [str(part) for part in err["loc"]]
    key = loc[0] if loc else ""
    where = f"{'.'.join(loc)}: " if loc else ""
    kind = err["type"]
    if kind == "extra_forbidden" and key == "ref":
        return f"ref in a locator mapping: {REF_IN_TEMPLATE}"
    if kind == "extra_forbidden":
        close = difflib.get_close_matches(key, LocatorSpec.KEYS, n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return (f"unknown key '{key}' in a locator{hint}; a locator takes one of {', '.join(TARGETS)}, "
                f"and optionally {', '.join(ROLE_OPTIONS)} (with role), exact, nth, within")
    if kind in ("too_short", "string_too_short"):
        if key == "name":
            return "name: must not be empty (leave it out to match any element of the role)"
        return f"{where}must not be empty"
    if kind in ("value_error", "assertion_error"):
        return f"{where}{(err.get('ctx') or {}).get('error', err['msg'])}"
    if kind in ("bool_type", "bool_parsing"):
        return f"{where}expected true or false, got {err.get('input')!r}"
    if kind == "string_type":
        return f"{where}expected a string, got {err.get('input')!r}"
    return f"{where}{err['msg']}"


def as_selector(value: Any) -> Any:
    """A ``selector:`` value before validation: a non-empty string, or a locator mapping."""
    if isinstance(value, LocatorSpec):
        return value
    if isinstance(value, str):
        if not value:
            raise ValueError("must not be empty")
        return value
    if isinstance(value, dict):
        try:
            return LocatorSpec.model_validate(value)
        except ValidationError as exc:
            raise ValueError("; ".join(_key_problem(e) for e in exc.errors(include_url=False))) from None
    raise ValueError(
        f"a selector is a string (CSS, text=, xpath=) or a locator mapping such as "
        f"{{role: button, name: Send}}, got {describe(value)}"
    )


#: A step's ``selector:``, ``within:``, ``until_missing:``… : a string or a :class:`LocatorSpec`.
Selector = Annotated[str | LocatorSpec, BeforeValidator(as_selector)]
LocatorSpec.model_rebuild()


def _quoted(value: Any) -> str:
    return json.dumps(str(value), ensure_ascii=False)


def selector_text(selector: str | LocatorSpec | dict[str, Any]) -> str:
    """A selector as messages show it: a string as it is; a locator as
    ``role=button[name="Send"]``, ``label="Email"``, ``#form >> text="Sign in" >> nth=1``."""
    if isinstance(selector, str):
        return selector
    if isinstance(selector, dict):
        try:
            selector = LocatorSpec.model_validate(selector)
        except ValidationError:
            return json.dumps(selector, ensure_ascii=False, default=str)
    spec = selector
    target = spec.target
    if target == "role":
        text = f"role={spec.role}"
        for key in ROLE_OPTIONS:
            value = getattr(spec, key)
            if value is None:
                continue
            shown = _quoted(value) if key == "name" else json.dumps(value)
            text += f"[{key}]" if value is True and key != "name" else f"[{key}={shown}]"
    elif target == "css":
        text = str(spec.css)
    else:
        text = f"{target}={_quoted(getattr(spec, target))}"
    if spec.exact:
        text += "[exact]"
    if spec.within is not None:
        text = f"{selector_text(spec.within)} >> {text}"
    if spec.nth is not None:
        text += f" >> nth={spec.nth}"
    return text


def selector_length(value: Any) -> int | None:
    """How long a selector is, for ``max_selector_length``: a string's length, a locator's
    readable form's; None for a value that is no selector (the schema reports it)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, LocatorSpec):
        return len(selector_text(value))
    if isinstance(value, dict):
        try:
            return len(selector_text(LocatorSpec.model_validate(value)))
        except ValidationError:
            return None
    return None


__all__ = [
    "ARIA_ROLES",
    "MAX_NTH",
    "REF_IN_TEMPLATE",
    "TARGETS",
    "LocatorSpec",
    "Selector",
    "as_selector",
    "selector_length",
    "selector_text",
    "session_only_problem",
]
