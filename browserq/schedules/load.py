"""Reading the schedules file: YAML → :class:`Schedule` entries, and every problem of its shape.

Each entry is parsed on its own, so one bad entry is reported with its line and name and the
others still parse; the result says what is wrong in one line per problem (the file, the
entry's line, the entry's name, the problem), never a traceback. Whether the entries fit their
templates is :mod:`browserq.schedules.check`'s job.

The file::

    schedules:
      - name: quotes-hourly
        template: quotes@1.2
        params: {start_url: "https://quotes.toscrape.com/"}
        cron: "0 * * * *"
        timezone: Europe/Berlin
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from browserq.schedules.model import FIELDS, NAME, Schedule


@dataclass(frozen=True)
class Problem:
    """One problem: where (file, line, entry) and what."""

    source: str
    message: str
    line: int | None = None
    entry: str | None = None

    def __str__(self) -> str:
        where = [self.source]
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.entry is not None:
            where.append(self.entry)
        return ": ".join([*where, self.message])


@dataclass
class Loaded:
    """The entries that parsed, the line each starts at, and every problem found."""

    source: str
    schedules: list[Schedule] = field(default_factory=list)
    lines: dict[str, int | None] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def problem(self, schedule: Schedule, message: str) -> Problem:
        """A problem of ``schedule`` (found after parsing), placed at its line."""
        return Problem(self.source, message, self.lines.get(schedule.name), label(schedule.name))


def label(name: str) -> str:
    return f"schedule {name!r}"


def read_schedules(path: Path) -> Loaded:
    """Parse the schedules file at ``path`` (never raises for what the file says)."""
    loaded = Loaded(str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        loaded.problems.append(Problem(loaded.source, "no such file (set BROWSERQ_SCHEDULES_FILE to "
                                                      "the YAML file of schedules)"))
        return loaded
    except (OSError, UnicodeDecodeError) as exc:
        loaded.problems.append(Problem(loaded.source, f"cannot be read: {exc}"))
        return loaded
    return parse_schedules(text, loaded)


def parse_schedules(text: str, loaded: Loaded) -> Loaded:
    """Parse the YAML ``text`` into ``loaded``."""
    try:
        data = yaml.safe_load(text)
        lines = _entry_lines(yaml.compose(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = mark.line + 1 if mark is not None else None
        loaded.problems.append(Problem(loaded.source, f"not valid YAML: {reason}", line))
        return loaded
    items = _items(data, loaded)
    for index, raw in enumerate(items):
        _add_entry(loaded, raw, index, lines[index] if index < len(lines) else None)
    return loaded


def _items(data: Any, loaded: Loaded) -> list[Any]:
    """The list under ``schedules:`` (an empty file has none); problems for any other shape."""
    if data is None:
        return []
    if not isinstance(data, dict):
        loaded.problems.append(Problem(loaded.source, "must be a mapping with one key, 'schedules': "
                                                      "a list of entries"))
        return []
    for key in data:
        if key != "schedules":
            loaded.problems.append(Problem(loaded.source, f"unknown top-level key {key!r}; the file "
                                                          "has one key, 'schedules': a list of entries"))
    items = data.get("schedules")
    if items is None:
        return []
    if not isinstance(items, list):
        loaded.problems.append(Problem(loaded.source, "'schedules' must be a list of entries"))
        return []
    return items


def _entry_lines(node: Any) -> list[int]:
    """The line each item under ``schedules:`` starts at (1-based), by position."""
    if not isinstance(node, yaml.MappingNode):
        return []
    for key, value in node.value:
        if getattr(key, "value", None) == "schedules" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def _add_entry(loaded: Loaded, raw: Any, index: int, line: int | None) -> None:
    name = raw.get("name") if isinstance(raw, dict) else None
    where = label(name) if isinstance(name, str) and NAME.fullmatch(name) else f"entry {index + 1}"
    if not isinstance(raw, dict):
        loaded.problems.append(Problem(loaded.source, f"must be a mapping ({', '.join(FIELDS)})", line, where))
        return
    try:
        schedule = Schedule.model_validate(raw)
    except ValidationError as exc:
        loaded.problems += [Problem(loaded.source, m, line, where) for m in validation_messages(exc)]
        return
    if schedule.name in loaded.lines:
        loaded.problems.append(Problem(
            loaded.source, f"the name is also used by the entry at line {loaded.lines[schedule.name]}; "
            "names must be unique (each slot's run is keyed by it)", line, where))
        return
    loaded.schedules.append(schedule)
    loaded.lines[schedule.name] = line


def validation_messages(exc: ValidationError) -> list[str]:
    """pydantic's errors as one line each, naming the field and never echoing a value (it may be
    a secret written where it does not belong)."""
    messages = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "string_type" and isinstance(err.get("input"), bool):
            msg += " (YAML reads a bare yes/no/on/off/true/false as a boolean: quote it)"
        if err["type"] == "missing":
            messages.append(f"{loc!r} is required")
        elif err["type"] == "extra_forbidden":
            messages.append(f"unknown field {loc!r} (an entry has: {', '.join(FIELDS)})")
        elif not loc:
            messages.append(msg)
        else:
            messages.append(f"{loc}: {msg}")
    return messages


__all__ = ["Loaded", "Problem", "label", "parse_schedules", "read_schedules", "validation_messages"]
