"""A preview of a run's outputs: the first records of a list as a table, anything else as JSON
cut to a readable length. The whole value stays in the store (``browserq show --json``)."""

from __future__ import annotations

import json
from typing import Any

from browserq.report.model import OutputPreview

MAX_ROWS = 10
MAX_COLUMNS = 12
MAX_CELL_CHARS = 300
MAX_JSON_CHARS = 4_000


def _json(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


def cell(value: Any) -> str:
    """A value inside one table cell, cut to MAX_CELL_CHARS."""
    if isinstance(value, list) and all(not isinstance(v, list | dict) for v in value):
        text = ", ".join("" if v is None else str(v) for v in value)
    elif isinstance(value, list | dict):
        text = _json(value)
    else:
        text = "" if value is None else str(value)
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def summary(value: Any) -> str:
    """What the value is, in a few words."""
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return f"{len(value)} record{'s' * (len(value) != 1)}"
        return f"list of {len(value)}"
    if isinstance(value, dict):
        return f"object, {len(value)} key{'s' * (len(value) != 1)}"
    if isinstance(value, str):
        return f"text, {len(value)} characters"
    if isinstance(value, bool) or value is None:
        return "true/false" if isinstance(value, bool) else "null"
    return "number" if isinstance(value, int | float) else type(value).__name__


def preview(name: str, value: Any) -> OutputPreview:
    """One output's preview (records as a table, the rest as indented JSON)."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        columns = tuple(dict.fromkeys(str(k) for row in value for k in row))[:MAX_COLUMNS]
        rows = tuple(tuple(cell(row.get(c)) for c in columns) for row in value[:MAX_ROWS])
        return OutputPreview(name=name, summary=summary(value), columns=columns, rows=rows,
                             more_rows=max(len(value) - MAX_ROWS, 0))
    text = value if isinstance(value, str) else _json(value, indent=2)
    cut = len(text) > MAX_JSON_CHARS
    return OutputPreview(name=name, summary=summary(value),
                         json_text=text[:MAX_JSON_CHARS] + ("\n…" if cut else ""), truncated=cut)


def previews(outputs: dict[str, Any] | None) -> tuple[OutputPreview, ...]:
    return tuple(preview(str(name), value) for name, value in (outputs or {}).items())
