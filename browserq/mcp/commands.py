"""A tool call → the session commands it stands for: template steps, by the template language's
own action names and fields (a command and a template step are the same thing).

``steps_for("browser_click", {"element": "Send", "ref": "e3.7"})`` →
``[{"action": "click", "ref": "e3.7", "description": "Send"}]``. Tools that are not commands
(snapshot, close, dialogs, saving) are the connection's (:mod:`browserq.mcp.connection`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

#: Tools that run as one or more session commands (everything else the connection answers itself).
Step = dict[str, Any]


class ToolInputError(ValueError):
    """The arguments fit the schema but not each other (``browser_wait_for`` with nothing to wait for)."""


def _target(args: Mapping[str, Any], step: Step) -> Step:
    """``ref`` (and ``element``, kept as the step's description) onto ``step``."""
    if "ref" in args:
        step["ref"] = args["ref"]
    if "element" in args:
        step["description"] = args["element"]
    return step


def _navigate(args: Mapping[str, Any]) -> list[Step]:
    return [{"action": "navigate", "url": args["url"]}]


def _back(args: Mapping[str, Any]) -> list[Step]:
    return [{"action": "go_back"}]


def _click(args: Mapping[str, Any]) -> list[Step]:
    step = _target(args, {"action": "click"})
    if args.get("doubleClick"):
        step["click_count"] = 2
    if "button" in args:
        step["button"] = args["button"]
    return [step]


def _type(args: Mapping[str, Any]) -> list[Step]:
    if args.get("slowly"):
        steps = [_target(args, {"action": "fill", "value": ""}), _target(args, {"action": "type", "text": args["text"]})]
    else:
        steps = [_target(args, {"action": "fill", "value": args["text"]})]
    if args.get("submit"):
        steps.append(_target(args, {"action": "press", "key": "Enter"}))
    return steps


def _fill_form(args: Mapping[str, Any]) -> list[Step]:
    steps = []
    for entry in args["fields"]:
        base = {"ref": entry["ref"], "description": entry["name"]}
        kind, value = entry["type"], entry["value"]
        if kind == "checkbox":
            if value not in ("true", "false"):
                raise ToolInputError(f"fields: {entry['name']!r} is a checkbox: its value is \"true\" or \"false\"")
            steps.append({"action": "check" if value == "true" else "uncheck", **base})
        elif kind == "radio":
            steps.append({"action": "check", **base})
        elif kind == "combobox":
            steps.append({"action": "select", "value": value, "by": "label", **base})
        else:
            steps.append({"action": "fill", "value": value, **base})
    return steps


def _select(args: Mapping[str, Any]) -> list[Step]:
    return [_target(args, {"action": "select", "value": list(args["values"]), "by": "value"})]


def _press(args: Mapping[str, Any]) -> list[Step]:
    return [{"action": "press", "key": args["key"]}]


def _hover(args: Mapping[str, Any]) -> list[Step]:
    return [_target(args, {"action": "hover"})]


def _wait_for(args: Mapping[str, Any]) -> list[Step]:
    given = [name for name in ("time", "text", "textGone") if name in args]
    if len(given) != 1:
        raise ToolInputError("give exactly one of time, text, textGone")
    if "time" in args:
        return [{"action": "wait", "ms": round(float(args["time"]) * 1000)}]
    text = args.get("text") or args["textGone"]
    # Playwright's getByText engine: a case-insensitive substring of an element's text
    return [{"action": "wait", "selector": f"internal:text={json.dumps(text)}i",
             "state": "visible" if "text" in args else "hidden"}]


def _screenshot(args: Mapping[str, Any]) -> list[Step]:
    step = _target(args, {"action": "screenshot", "full_page": bool(args.get("fullPage"))})
    if "filename" in args:
        step["name"] = args["filename"] if args["filename"].endswith(".png") else args["filename"] + ".png"
    return [step]


def _tabs(args: Mapping[str, Any]) -> list[Step]:
    action, index = args["action"], args.get("index")
    if action == "select":
        if index is None:
            raise ToolInputError("select needs the index of the tab")
        return [{"action": "switch_tab", "to": index}]
    if action == "close":
        return ([] if index is None else [{"action": "switch_tab", "to": index}]) + [{"action": "close_tab"}]
    if action == "list":
        return [{"action": "list_tabs"}]
    return [{"action": "new_tab", **({"url": args["url"]} if "url" in args else {})}]


def _upload(args: Mapping[str, Any]) -> list[Step]:
    return [_target(args, {"action": "upload", "files": [{"path": path} for path in args["paths"]]})]


def _evaluate(args: Mapping[str, Any]) -> list[Step]:
    if "ref" in args:
        raise ToolInputError("browser_evaluate runs on the page here, not on an element: leave out ref/element")
    return [{"action": "eval", "expression": args["function"]}]


def _extract(args: Mapping[str, Any]) -> list[Step]:
    step: Step = {"action": "extract", "selector": args["selector"], "allow_empty": True}
    if "fields" in args:
        step["fields"] = dict(args["fields"])
    if "limit" in args:
        step["limit"] = args["limit"]
    return [step]


def _handoff(args: Mapping[str, Any]) -> list[Step]:
    step: Step = {"action": "handoff", "message": args["message"]}
    if "timeout_s" in args:
        step["timeout_s"] = args["timeout_s"]
    return [step]


COMMAND_TOOLS: dict[str, Callable[[Mapping[str, Any]], list[Step]]] = {
    "browser_navigate": _navigate,
    "browser_navigate_back": _back,
    "browser_click": _click,
    "browser_type": _type,
    "browser_fill_form": _fill_form,
    "browser_select_option": _select,
    "browser_press_key": _press,
    "browser_hover": _hover,
    "browser_wait_for": _wait_for,
    "browser_take_screenshot": _screenshot,
    "browser_tabs": _tabs,
    "browser_file_upload": _upload,
    "browser_evaluate": _evaluate,
    "browser_extract": _extract,
    "browser_handoff": _handoff,
}


def steps_for(tool: str, args: Mapping[str, Any]) -> list[Step]:
    """The session commands ``tool`` stands for (``ToolInputError`` when its arguments clash)."""
    return COMMAND_TOOLS[tool](args)


__all__ = ["COMMAND_TOOLS", "Step", "ToolInputError", "steps_for"]
