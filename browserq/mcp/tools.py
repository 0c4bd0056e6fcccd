"""The tools ``browserq mcp`` offers: names, argument names and JSON schemas.

Where Microsoft's playwright-mcp has a tool, the name and the argument names are its own
(``element``: the human description of the element, ``ref``: the ref a snapshot gave it), so a
prompt written for it works here. Every schema bounds its strings, arrays and numbers; the
server validates each call against it before anything reaches a session
(:func:`argument_problems`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from browserq.templates.fields import MAX_EXTRACT_LIMIT, MAX_WAIT_MS
from browserq.templates.file_steps import MAX_UPLOAD_FILES
from browserq.templates.tab_steps import MAX_TABS

#: The longest text a tool takes (a typed text, a JS function, a description).
MAX_TEXT = 10_000
#: The longest URL a tool takes.
MAX_URL = 4_096
#: The most fields one ``browser_fill_form`` fills.
MAX_FORM_FIELDS = 50

ELEMENT = {"type": "string", "minLength": 1, "maxLength": 1_000,
           "description": "Human-readable element description used to obtain permission to interact with the element"}
REF = {"type": "string", "minLength": 1, "maxLength": 64,
       "description": "Exact target element reference from the page snapshot (its [ref=…])"}
SELECTOR = {"type": "string", "minLength": 1, "maxLength": 1_000,
            "description": "A CSS (or Playwright text=/role=) selector"}


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, what it does, its arguments (JSON schema properties)."""

    name: str
    title: str
    description: str
    properties: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    read_only: bool = False

    @property
    def schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": dict(self.properties), "required": list(self.required),
                "additionalProperties": False}


def _element(**more: Any) -> dict[str, Any]:
    return {"element": ELEMENT, "ref": REF, **more}


_FORM_FIELD = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 1_000, "description": "Human-readable field name"},
        "type": {"type": "string", "enum": ["textbox", "checkbox", "radio", "combobox", "slider"],
                 "description": "Type of the field"},
        "ref": REF,
        "value": {"type": "string", "maxLength": MAX_TEXT,
                  "description": 'Value to fill in. A checkbox takes "true" or "false"; a combobox the option\'s text'},
    },
    "required": ["name", "type", "ref", "value"],
    "additionalProperties": False,
}

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("browser_navigate", "Navigate to a URL", "Navigate to a URL (inside the session's allowed_domains)",
             {"url": {"type": "string", "minLength": 1, "maxLength": MAX_URL, "description": "The URL to navigate to"}},
             ("url",)),
    ToolSpec("browser_navigate_back", "Go back", "Go back to the previous page in the history"),
    ToolSpec("browser_snapshot", "Page snapshot",
             "Capture accessibility snapshot of the current page, this is better than screenshot. Each node to act "
             "on carries [ref=…]; a ref names exactly that node and fails REF_STALE once it is gone",
             {"interactive": {"type": "boolean", "description": "Only what can be acted on (about half the text)"},
              "budget": {"type": "integer", "minimum": 1_000, "maximum": 100_000,
                         "description": "Most characters of snapshot text (default 100000)"}},
             read_only=True),
    ToolSpec("browser_click", "Click", "Perform click on a web page",
             _element(doubleClick={"type": "boolean", "description": "Whether to perform a double click"},
                      button={"type": "string", "enum": ["left", "right", "middle"],
                              "description": "Button to click, defaults to left"}),
             ("element", "ref")),
    ToolSpec("browser_type", "Type text", "Type text into editable element",
             _element(text={"type": "string", "maxLength": MAX_TEXT, "description": "Text to type into the element"},
                      submit={"type": "boolean", "description": "Whether to submit entered text (press Enter after)"},
                      slowly={"type": "boolean", "description": "Whether to type one character at a time"}),
             ("element", "ref", "text")),
    ToolSpec("browser_fill_form", "Fill form", "Fill multiple form fields",
             {"fields": {"type": "array", "minItems": 1, "maxItems": MAX_FORM_FIELDS, "items": _FORM_FIELD,
                         "description": "Fields to fill in"}},
             ("fields",)),
    ToolSpec("browser_select_option", "Select option", "Select an option in a dropdown (by the option's value)",
             _element(values={"type": "array", "minItems": 1, "maxItems": 100,
                              "items": {"type": "string", "maxLength": 1_000},
                              "description": "Array of values to select in the dropdown"}),
             ("element", "ref", "values")),
    ToolSpec("browser_press_key", "Press a key", "Press a key on the keyboard",
             {"key": {"type": "string", "minLength": 1, "maxLength": 100,
                      "description": "Name of the key to press or a character to generate, such as `ArrowLeft` or `a`"}},
             ("key",)),
    ToolSpec("browser_hover", "Hover mouse", "Hover over element on page", _element(), ("element", "ref")),
    ToolSpec("browser_wait_for", "Wait for", "Wait for text to appear or disappear or a specified time to pass",
             {"time": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_MS / 1000,
                       "description": "The time to wait in seconds"},
              "text": {"type": "string", "minLength": 1, "maxLength": 1_000, "description": "The text to wait for"},
              "textGone": {"type": "string", "minLength": 1, "maxLength": 1_000,
                           "description": "The text to wait for to disappear"}}),
    ToolSpec("browser_take_screenshot", "Take a screenshot",
             "Take a screenshot of the current page (a PNG image). You can't perform actions based on the "
             "screenshot, use browser_snapshot for actions",
             {"element": ELEMENT, "ref": REF,
              "type": {"type": "string", "enum": ["png"], "description": "Image format: png"},
              "filename": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"^[A-Za-z0-9._-]+$",
                           "description": "Name of the screenshot among the session's artifacts"},
              "fullPage": {"type": "boolean", "description": "The full scrollable page instead of the viewport"}},
             read_only=True),
    ToolSpec("browser_tabs", "Manage tabs", "List, close, or select a browser tab",
             {"action": {"type": "string", "enum": ["list", "new", "close", "select"],
                         "description": "Operation to perform"},
              "index": {"type": "integer", "minimum": 0, "maximum": MAX_TABS - 1,
                        "description": "Tab index, used for close/select. If omitted for close, current tab is closed"},
              "url": {"type": "string", "minLength": 1, "maxLength": MAX_URL, "description": "URL for new"}},
             ("action",)),
    ToolSpec("browser_file_upload", "Upload files",
             "Set files on a file input: paths inside the workers' BROWSERQ_UPLOADS_DIR",
             _element(paths={"type": "array", "minItems": 1, "maxItems": MAX_UPLOAD_FILES,
                             "items": {"type": "string", "minLength": 1, "maxLength": 1_000},
                             "description": "Paths of the files (relative to the uploads directory)"}),
             ("ref", "paths")),
    ToolSpec("browser_handle_dialog", "Handle a dialog",
             "How the dialogs (alert, confirm, prompt) that the NEXT call opens are answered",
             {"accept": {"type": "boolean", "description": "Whether to accept the dialog"},
              "promptText": {"type": "string", "maxLength": MAX_TEXT,
                             "description": "The text of the prompt in case of a prompt dialog"}},
             ("accept",)),
    ToolSpec("browser_close", "Close browser", "Close the session (the next call opens a new one)"),
    ToolSpec("browser_evaluate", "Evaluate JavaScript", "Evaluate JavaScript expression on page",
             {"function": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT,
                           "description": "() => { /* code */ }"},
              "element": ELEMENT, "ref": REF},
             ("function",)),
    ToolSpec("browser_extract", "Extract records",
             "Records from the page: one per element matching selector, each with the text of its fields "
             "(sub-selectors), as the template language's extract action",
             {"selector": SELECTOR,
              "fields": {"type": "object", "minProperties": 1, "maxProperties": 50,
                         "additionalProperties": {"type": "string", "minLength": 1, "maxLength": 1_000},
                         "description": "Field name → sub-selector whose text is taken"},
              "limit": {"type": "integer", "minimum": 1, "maximum": MAX_EXTRACT_LIMIT,
                        "description": "Most records"}},
             ("selector",), read_only=True),
    ToolSpec("browser_handoff", "Ask a person",
             "Hand the live page to a person (an operator opens `browserq live SESSION_ID`, takes the page "
             "over and presses Continue); returns what they did, or fails HUMAN_TIMEOUT",
             {"message": {"type": "string", "minLength": 1, "maxLength": 2_000,
                          "description": "What the person is asked to do"},
              "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 3_600,
                            "description": "How long to wait for the person (default 600 s)"}},
             ("message",)),
    ToolSpec("session_save_template", "Save the session as a template",
             "Freeze what this session did into a versioned template that replays without an agent",
             {"name": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": r"^[a-z0-9][a-z0-9_-]*$",
                       "description": "Template name"},
              "version": {"type": "string", "minLength": 5, "maxLength": 50,
                          "pattern": r"^\d+\.\d+\.\d+$", "description": "Semantic version, e.g. 1.0.0"},
              "params": {"type": "object", "maxProperties": 50,
                         "description": "Param name → the literal value it stands for in the commands"}},
             ("name", "version")),
)

BY_NAME: dict[str, ToolSpec] = {tool.name: tool for tool in TOOLS}
_VALIDATORS = {tool.name: Draft202012Validator(tool.schema) for tool in TOOLS}


def argument_problems(name: str, arguments: Mapping[str, Any]) -> list[str]:
    """Every way ``arguments`` break the tool's schema, each naming the argument (empty: valid)."""
    problems = []
    for error in sorted(_VALIDATORS[name].iter_errors(dict(arguments)), key=lambda e: list(map(str, e.path))):
        where = ".".join(str(part) for part in error.absolute_path)
        problems.append(f"{where}: {error.message}" if where else error.message)
    return problems


__all__ = ["BY_NAME", "TOOLS", "ToolSpec", "argument_problems"]
