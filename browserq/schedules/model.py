"""One entry of the schedules file, as pydantic models (``extra="forbid"``: a typo is an error).

An entry names a template run and when it fires: ``every: 5m`` (an interval) or ``cron: "…"``
(five fields, with an optional IANA ``timezone``). Param values are plain values or references
(``{env: VAR}``, ``{file: /path}``) resolved each time the entry fires; a param the template
declares secret may only be given by reference (checked against the template in
:mod:`browserq.schedules.check`, the only place that knows which params are secret).
"""

from __future__ import annotations

import re
from datetime import UTC
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    field_validator,
    model_validator,
)

from browserq.schedules.timing import Timing, cron_timing, every_timing
from browserq.templates.fields import queue_problem

#: Entry names: they become part of each slot's idempotency key (``schedule:<name>:<slot>``).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}")
EVERY = re.compile(r"\s*(\d+)\s*([smhd])\s*")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_EVERY_S = 366 * 86400
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FIELDS = ("name", "template", "params", "every", "cron", "timezone", "queue", "enabled")


class EnvRef(BaseModel):
    """``{env: VAR}``: the value of an environment variable of the beat process."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    env: StrictStr


class FileRef(BaseModel):
    """``{file: /path}``: a file's text without its trailing newline (Docker/Kubernetes secrets)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    file: Path


Reference = EnvRef | FileRef


def _reference(value: Any) -> Any:
    """A param value: a mapping must be ``{env: VAR}`` or ``{file: /path}`` (no param type takes
    a mapping); anything else stays as written."""
    if not isinstance(value, dict):
        return value
    keys = sorted(map(str, value))
    target = next(iter(value.values())) if len(keys) == 1 else None
    if keys == ["env"] and isinstance(target, str) and ENV_NAME.fullmatch(target):
        return EnvRef(env=target)
    if keys == ["file"] and isinstance(target, str) and target.strip():
        return FileRef(file=Path(target))
    if keys in (["env"], ["file"]):
        what = "an environment variable name" if keys == ["env"] else "a file path"
        raise ValueError(f"{{{keys[0]}: …}} needs {what}")
    raise ValueError(
        f"a mapping must be a reference, {{env: VAR}} or {{file: /path}} (got keys: {', '.join(keys) or 'none'})"
    )


ParamValue = Annotated[Any, BeforeValidator(_reference)]


class Schedule(BaseModel):
    """One scheduled template run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr
    template: StrictStr
    params: dict[StrictStr, ParamValue] = Field(default_factory=dict)
    every: StrictStr | None = None
    cron: StrictStr | None = None
    timezone: StrictStr | None = None
    queue: StrictStr | None = None
    enabled: StrictBool = True

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a schedule name: up to 100 letters, digits and _ . : - "
                "(starting with a letter or digit)"
            )
        return value

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a template reference like 'quotes@1.2' or 'quotes'")
        return value.strip()

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("every")
    @classmethod
    def _every(cls, value: str | None) -> str | None:
        if value is not None:
            every_seconds(value)
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str | None) -> str | None:
        if value is not None:
            zone(value)
        return value

    @field_validator("queue")
    @classmethod
    def _queue(cls, value: str | None) -> str | None:
        problem = None if value is None else queue_problem(value)  # the producer's own rule
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _one_timing(self) -> Schedule:
        if (self.every is None) == (self.cron is None):
            raise ValueError("give exactly one of 'every' (e.g. 5m) and 'cron' (e.g. \"*/5 * * * *\")")
        if self.every is not None and self.timezone is not None:
            raise ValueError("'timezone' applies to 'cron' only (an 'every' interval counts in UTC)")
        _ = self.timing  # a cron expression celery cannot read fails here, with celery's reason
        return self

    @cached_property
    def timing(self) -> Timing:
        """When this entry fires (celery's ``schedule``/``crontab`` underneath)."""
        if self.every is not None:
            return every_timing(every_seconds(self.every), self.every.strip())
        return cron_timing(self.cron or "", zone(self.timezone) if self.timezone else UTC)

    @property
    def references(self) -> dict[str, Reference]:
        return {k: v for k, v in self.params.items() if isinstance(v, EnvRef | FileRef)}


def every_seconds(text: str) -> int:
    """``"5m"`` → 300. Raises ValueError saying the accepted form."""
    match = EVERY.fullmatch(text)
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"{text!r} is not an interval: a whole number > 0 and a unit s/m/h/d, e.g. 30s or 5m")
    seconds = int(match.group(1)) * UNITS[match.group(2)]
    if seconds > MAX_EVERY_S:
        raise ValueError(f"{text!r} is longer than 366d; use a cron line for rarer runs")
    return seconds


def zone(name: str) -> ZoneInfo:
    """The IANA timezone ``name``; raises ValueError naming it."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        if not available_timezones():
            raise ValueError(f"timezone {name!r} cannot be read: this host has no timezone database "
                             "(install the system's tzdata package, or `pip install tzdata`)") from None
        raise ValueError(f"unknown timezone {name!r} (an IANA name like Europe/Berlin or UTC)") from None


__all__ = ["FIELDS", "EnvRef", "FileRef", "Reference", "Schedule", "every_seconds", "zone"]
