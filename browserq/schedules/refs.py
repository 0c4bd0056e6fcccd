"""Param references: ``{env: VAR}`` and ``{file: /path}`` become values when an entry fires.

Resolved at every fire, not once: a rotated secret file or a changed variable is used from the
next slot on, and no secret sits in the schedule objects beat keeps. What a reference resolves
to is never printed; errors name the param and the reference only.
"""

from __future__ import annotations

import os
from typing import Any

from browserq.errors import ConfigError
from browserq.schedules.model import EnvRef, FileRef, Reference, Schedule


def resolve_reference(reference: Reference) -> str:
    """The text a reference points to; raises ValueError saying what is missing."""
    if isinstance(reference, EnvRef):
        value = os.environ.get(reference.env)
        if value is None:
            raise ValueError(f"environment variable {reference.env} is not set")
        if not value:
            raise ValueError(f"environment variable {reference.env} is empty")
        return value
    assert isinstance(reference, FileRef)
    try:
        value = reference.file.read_text(encoding="utf-8").rstrip("\r\n")
    except FileNotFoundError:
        raise ValueError(f"file {reference.file} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"file {reference.file} cannot be read: {type(exc).__name__}") from None
    if not value:
        raise ValueError(f"file {reference.file} is empty")
    return value


def resolve_params(schedule: Schedule) -> tuple[dict[str, Any], list[str]]:
    """``schedule``'s params with every reference replaced by its value, and one line per
    reference that does not resolve (left out of the params)."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in schedule.params.items():
        if not isinstance(value, EnvRef | FileRef):
            values[name] = value
            continue
        try:
            values[name] = resolve_reference(value)
        except ValueError as exc:
            problems.append(f"param {name!r}: {exc}")
    return values, problems


def resolved_params(schedule: Schedule) -> dict[str, Any]:
    """The params to submit; ConfigError if a reference stopped resolving since beat checked it."""
    values, problems = resolve_params(schedule)
    if problems:
        raise ConfigError(f"schedule {schedule.name!r}: " + "; ".join(problems))
    return values


__all__ = ["resolve_params", "resolve_reference", "resolved_params"]
