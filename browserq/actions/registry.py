"""Which handler runs which action: ``handler_for(step)``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from browserq.actions.assertions import assert_
from browserq.actions.context import StepContext
from browserq.actions.download import download
from browserq.actions.evaluate import evaluate
from browserq.actions.extract import extract, get
from browserq.actions.input import check, click, fill, hover, press, select, type_text, uncheck
from browserq.actions.navigation import go_back, navigate, scroll, wait
from browserq.actions.refs import ref_guarded, ref_of
from browserq.actions.screenshot import screenshot
from browserq.actions.tabs import close_tab, list_tabs, new_tab, switch_tab
from browserq.actions.upload import upload
from browserq.templates import ActionStep, LocatorSpec

Action = Callable[[StepContext, Any], Awaitable[Any]]

ACTION_HANDLERS: dict[str, Action] = {
    "navigate": navigate,
    "go_back": go_back,
    "click": click,
    "fill": fill,
    "type": type_text,
    "select": select,
    "check": check,
    "uncheck": uncheck,
    "press": press,
    "hover": hover,
    "scroll": scroll,
    "wait": wait,
    "extract": extract,
    "get": get,
    "eval": evaluate,
    "screenshot": screenshot,
    "assert": assert_,
    "switch_tab": switch_tab,
    "close_tab": close_tab,
    "list_tabs": list_tabs,
    "new_tab": new_tab,
    "download": download,
    "upload": upload,
}


def handler_for(step: ActionStep) -> Action:
    """The coroutine that runs ``step``'s action (on a session ref's node, when it names one)."""
    handler = ACTION_HANDLERS[step.action]
    return ref_guarded(handler) if ref_of(getattr(step, "selector", None)) else handler


def element_selector(step: ActionStep) -> str | LocatorSpec | None:
    """The selector whose absence makes an ``optional`` step a skip, if the action has one."""
    if step.action in {"navigate", "go_back", "list_tabs", "new_tab", "eval", "screenshot", "assert", "wait"}:
        return None
    return getattr(step, "selector", None)
