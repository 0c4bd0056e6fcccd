"""THE way a selector becomes a Playwright locator: :func:`to_locator`.

Every selector of a template (an action's, a presence check's, a repeat's stop condition, the
session check, a postcondition, an extract field) reaches the page through here, whether it is
written as a string (CSS, ``text=``, ``xpath=``, ``>>>`` into iframes) or as a locator mapping
(``{role: button, name: "Send"}``, see :mod:`browserq.templates.locators`). How a selector is
shown in messages is :func:`selector_text`, so both forms read the same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from playwright.async_api import FrameLocator, Locator, Page

from browserq.errors import Codes, StepFailed
from browserq.templates import LocatorSpec, selector_text
from browserq.templates.locators import ROLE_OPTIONS, AriaRole, as_selector

#: ``"iframe#pay >>> button.submit"`` enters the frame matched on the left, then selects inside it.
FRAME_SEPARATOR = ">>>"

#: Where a search starts: the page, an element (``within``, an extract record) or a frame.
Scope = Page | Locator | FrameLocator
#: A selector as the runner holds it: the validated forms, or a mapping rendered from a step's
#: fields (a postcondition, a ``when:`` condition) that has not been validated again yet.
SelectorValue = str | LocatorSpec | Mapping[str, Any]


def to_locator(scope: Scope, selector: SelectorValue) -> Locator:
    """A locator for ``selector``, searched inside ``scope`` (all its matches; ``.first`` is the
    caller's choice). A mapping that is no valid locator is ``INVALID_STEP_INPUT``."""
    spec = _spec(selector)
    if isinstance(spec, str):
        return _string_locator(scope, spec)
    base: Scope = scope if spec.within is None else to_locator(scope, spec.within)
    found = _target(base, spec)
    if spec.nth is not None:
        if not isinstance(spec.nth, int):
            raise StepFailed(Codes.INVALID_STEP_INPUT, f"nth {spec.nth!r} of {spec} was not resolved to an integer")
        found = found.nth(spec.nth)
    return found


def _spec(selector: object) -> str | LocatorSpec:
    if isinstance(selector, str | LocatorSpec):
        return selector
    try:
        return as_selector(dict(selector) if isinstance(selector, Mapping) else selector)
    except ValueError as exc:
        raise StepFailed(Codes.INVALID_STEP_INPUT, f"invalid selector: {exc}") from None


def _string_locator(scope: Scope, selector: str) -> Locator:
    """A Playwright selector string, with ``>>>`` stepping into (nested) iframes."""
    if FRAME_SEPARATOR not in selector:
        return scope.locator(selector)
    *frames, inner = [part.strip() for part in selector.split(FRAME_SEPARATOR)]
    frame = scope.frame_locator(frames[0])
    for name in frames[1:]:
        frame = frame.frame_locator(name)
    return frame.locator(inner)


def _target(base: Scope, spec: LocatorSpec) -> Locator:
    """The ``get_by_*`` call a locator mapping stands for."""
    target = spec.target
    if target == "css":
        return _string_locator(base, str(spec.css))
    if target == "test_id":
        return base.get_by_test_id(str(spec.test_id))
    if target == "role":
        options = {
            key: getattr(spec, key)
            for key in ROLE_OPTIONS
            if getattr(spec, key) is not None
        }
        role = cast(AriaRole, spec.role)  # _check_role ran at load and again in render_step
        return base.get_by_role(role, exact=spec.exact, **options)
    finders = {
        "label": base.get_by_label,
        "text": base.get_by_text,
        "placeholder": base.get_by_placeholder,
        "alt": base.get_by_alt_text,
        "title": base.get_by_title,
    }
    return finders[target](str(getattr(spec, target)), exact=spec.exact)


def shown(selector: SelectorValue) -> str:
    """A selector as a failure message shows it: ``'#email'`` or ``role=button[name="Send"]``."""
    if isinstance(selector, str):
        return repr(selector)
    return selector_text(dict(selector) if isinstance(selector, Mapping) else selector)


__all__ = ["FRAME_SEPARATOR", "Scope", "SelectorValue", "shown", "to_locator"]
