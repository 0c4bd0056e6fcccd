"""Checking the schedules file against the templates, the way the producer will check each fire.

``browserq beat`` (before it starts, and again inside the beat process) and ``browserq schedules
validate`` run the same checks: the file's shape (:mod:`browserq.schedules.load`), then for every
enabled entry that its template resolves in the registry, that no secret param is written
inline, that its references resolve (regular files, bounded), and that its params pass the producer's own validation
(:func:`browserq.execute.admission.admit`, the door ``run_template.delay`` goes through). A disabled entry is
checked for shape only: disabling is how an operator keeps an entry that cannot run yet. No
problem line shows a referenced value (:func:`~browserq.schedules.refs.conceal`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from browserq.errors import ConfigError, ParamError, TemplateError, TemplateInvalid
from browserq.execute.admission import admit
from browserq.schedules.load import Loaded, Problem, read_schedules
from browserq.schedules.model import EnvRef, FileRef, Schedule
from browserq.schedules.refs import conceal, resolve_params
from browserq.schedules.timing import slot_key
from browserq.secrets import KEY_HINT, SecretBox
from browserq.settings import Settings, get_settings
from browserq.templates import TemplateRegistry, secret_names

#: Any slot: every slot's key has the same length, so one shows whether the name fits.
SAMPLE_SLOT = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass
class Checked:
    """The outcome: the entries beat will fire, the disabled ones, and every problem."""

    loaded: Loaded
    ready: list[Schedule] = field(default_factory=list)
    disabled: list[Schedule] = field(default_factory=list)

    @property
    def problems(self) -> list[Problem]:
        return self.loaded.problems

    @property
    def ok(self) -> bool:
        return not self.problems


def check_schedules(
    path: Path,
    registry: TemplateRegistry,
    secret_box: SecretBox,
    *,
    settings: Settings | None = None,
    reserved: Collection[str] = (),
) -> Checked:
    """Read ``path`` and check every entry as beat's firing will admit it, under every limit of
    ``settings`` (default: the current ones); ``reserved``: names of the app's own beat entries."""
    settings = settings or get_settings()
    checked = Checked(read_schedules(path))
    loaded = checked.loaded
    for schedule in loaded.schedules:
        problems = []
        if schedule.name in reserved:
            problems.append(f"the name is taken by the app's own beat entry {schedule.name!r}; pick another")
        if schedule.enabled:
            problems += schedule_problems(schedule, registry, secret_box, settings)
        loaded.problems += [loaded.problem(schedule, p) for p in problems]
        if not problems:
            (checked.ready if schedule.enabled else checked.disabled).append(schedule)
    loaded.problems.sort(key=lambda p: p.line or 0)  # in the file's order (stable within a line)
    return checked


def schedule_problems(
    schedule: Schedule, registry: TemplateRegistry, secret_box: SecretBox, settings: Settings
) -> list[str]:
    """Why ``schedule`` could not be submitted (one line each; empty when it can)."""
    try:
        loaded = registry.resolve(schedule.template)
    except TemplateInvalid as exc:
        return [f"template {schedule.template!r} is invalid ({exc.source}): {_line(p)}" for p in exc.problems]
    except TemplateError as exc:
        return [_line(str(exc))]
    problems = [
        f"param {name!r} is secret in template {loaded.ref}: give it by reference, "
        "{env: VAR} or {file: /path}, never inline"
        for name in sorted(secret_names(loaded.template))
        if schedule.params.get(name) is not None and not isinstance(schedule.params[name], EnvRef | FileRef)
    ]
    values, unresolved = resolve_params(schedule)
    problems += unresolved
    if problems:
        return problems
    try:
        # The door beat's firing goes through (run_template.delay), under every limit of the settings.
        prepared = admit(settings, loaded, values, idempotency_key=slot_key(schedule.name, SAMPLE_SLOT)).prepared
    except ParamError as exc:
        return [f"template {exc.template}: {_line(p)}" for p in conceal(schedule, values, exc.problems)]
    except (TemplateError, ConfigError) as exc:
        return conceal(schedule, values, [_line(str(exc))])
    if prepared.secret_values and not secret_box.enabled:
        problems.append(f"template {loaded.ref} takes secret params but BROWSERQ_SECRET_KEY is not set; {KEY_HINT}")
    return problems


def _line(text: str) -> str:
    return " ".join(text.split())


__all__ = ["SAMPLE_SLOT", "Checked", "check_schedules", "schedule_problems"]
