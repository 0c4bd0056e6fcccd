"""The vocabulary of templates: one coroutine per action, and the step context it receives.

Each handler does one job and returns the step's output (or None). Handlers raise
:class:`StepFailed` with a specific code for anything the page or the template did wrong;
Playwright exceptions that escape are translated by the runner, at the one place an action's
exception enters it. Element actions use the first match of a selector: templates are written
against live sites where "the first button that matches" is what a person means. Actions record
only through their :class:`StepContext` (artifacts, warnings), never through the store.
"""

from browserq.actions.context import StepContext, not_noted, not_traced
from browserq.actions.locate import locate, present, settle, url_matcher
from browserq.actions.locators import SelectorValue, shown, to_locator
from browserq.actions.registry import ACTION_HANDLERS, Action, element_selector, handler_for

__all__ = [
    "ACTION_HANDLERS",
    "Action",
    "SelectorValue",
    "StepContext",
    "element_selector",
    "handler_for",
    "locate",
    "not_noted",
    "not_traced",
    "present",
    "settle",
    "shown",
    "to_locator",
    "url_matcher",
]
