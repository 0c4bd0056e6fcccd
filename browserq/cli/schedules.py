"""``browserq schedules``: check and list the schedules file beat fires (BROWSERQ_SCHEDULES_FILE).

``validate`` runs exactly the checks ``browserq beat`` runs before it starts (:func:`preflight`):
the file's shape, each enabled entry's template in the registry, its params through the
producer's validation, its references. Neither needs the database, the broker or Redis.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from browserq.cli.render import console, err_console, fail, friendly_errors, plain, tsv
from browserq.settings import Settings, get_settings

FileArgument = Annotated[
    Path | None, typer.Argument(help="The schedules file (default: BROWSERQ_SCHEDULES_FILE).")
]


def _path(settings: Settings, path: Path | None) -> Path:
    chosen = path or settings.schedules_file
    if chosen is None:
        fail("no schedules file: set BROWSERQ_SCHEDULES_FILE (or give the file) to a YAML file "
             "of schedules; see docs/operating.md § Schedules")
    assert chosen is not None
    return chosen


def _reserved() -> set[str]:
    """Names of the app's own beat entries (the sweeper's), which a file entry may not take."""
    from browserq.tasks.app import app

    return set(app.conf.beat_schedule) | {"celery.backend_cleanup"}


def check(settings: Settings, path: Path) -> Any:
    """The schedules file at ``path`` checked as beat will check it (a ``Checked``)."""
    from browserq.schedules import check_schedules
    from browserq.secrets import SecretBox
    from browserq.templates import TemplateRegistry

    registry = TemplateRegistry.from_settings(settings)
    return check_schedules(path, registry, SecretBox(settings.secret_key),
                           settings=settings, reserved=_reserved())


def _print_problems(checked: Any) -> None:
    for problem in checked.problems:
        err_console.print(Text.assemble(("error:", "bold red"), f" {problem}"), highlight=False)


def preflight(settings: Settings) -> int:
    """What ``browserq beat`` checks before it starts: every problem on its own line and exit
    code 2, or the number of entries it will fire."""
    if settings.schedules_file is None:
        return 0
    checked = check(settings, settings.schedules_file)
    if checked.problems:
        _print_problems(checked)
        raise typer.Exit(2)
    return len(checked.ready)


@friendly_errors
def schedules_validate(path: FileArgument = None) -> None:
    """Check the schedules file as `browserq beat` does; exits 1 if any entry has a problem."""
    settings = get_settings()
    checked = check(settings, _path(settings, path))
    for schedule in checked.ready:
        console.print(Text.assemble(("OK", "green"), f" {schedule.name}  {schedule.template}  "
                                    f"{schedule.timing.text}"), highlight=False, soft_wrap=True)
    for schedule in checked.disabled:
        console.print(Text.assemble(("OK", "yellow"), f" {schedule.name}  disabled "
                                    "(shape checked only; enable it to check it against its template)"),
                      highlight=False, soft_wrap=True)
    _print_problems(checked)
    raise typer.Exit(1 if checked.problems else 0)


@friendly_errors
def schedules_list(path: FileArgument = None) -> None:
    """The entries of the schedules file with their next fire time (the file's shape must be valid)."""
    from browserq.schedules import read_schedules
    from browserq.schedules.timing import utc_now

    loaded = read_schedules(_path(get_settings(), path))
    if loaded.problems:
        for problem in loaded.problems:
            err_console.print(Text.assemble(("error:", "bold red"), f" {problem}"), highlight=False)
        raise typer.Exit(2)
    now = utc_now()
    rows = [
        (s.name, s.template, s.timing.text, s.timing.zone_name, s.queue or "(default)",
         "yes" if s.enabled else "no",
         s.timing.next_after(now).astimezone(s.timing.zone).isoformat() if s.enabled else "")
        for s in loaded.schedules
    ]
    columns = ("name", "template", "schedule", "timezone", "queue", "enabled", "next fire")
    if plain():
        tsv(*columns)
        for row in rows:
            tsv(*row)
        return
    table = Table(title=f"Schedules in {loaded.source} ({len(rows)})", title_justify="left",
                  box=box.SIMPLE_HEAD)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row[:5], Text(row[5], style="green" if row[5] == "yes" else "yellow"), row[6])
    console.print(table)


__all__ = ["check", "preflight", "schedules_list", "schedules_validate"]
