"""The ``browserq`` command: run templates in-process, start workers, inspect runs.

The commands live by theme — :mod:`~browserq.cli.run_commands` (run, demo, runs, show, cancel, batch), :mod:`~browserq.cli.resolve` (resolve),
:mod:`~browserq.cli.operations` (worker, beat, sweep, db, settings, proxies, identities, keygen),
:mod:`~browserq.cli.templates` (templates list/validate), :mod:`~browserq.cli.doctor` (doctor),
:mod:`~browserq.cli.webhooks` (webhooks redeliver), :mod:`~browserq.cli.agents` (mcp) — printed through
:mod:`~browserq.cli.render`. This module builds the typer ``app`` from them, in the order
``--help`` lists them, and holds :func:`main`, the console script's entry point.
"""

from __future__ import annotations

import os
import sys

import typer
from rich.text import Text

from browserq import heap
from browserq.cli.agents import mcp_server
from browserq.cli.doctor import doctor
from browserq.cli.enqueue import enqueue
from browserq.cli.human import live
from browserq.cli.locate import locate
from browserq.cli.operations import (
    PASSTHROUGH,
    beat,
    db_upgrade,
    identities_add,
    identities_disable,
    identities_list,
    keygen,
    proxies,
    show_settings,
    sweep,
    worker,
    worker_argv,
)
from browserq.cli.params import parse_params, undecodable_argument
from browserq.cli.render import STATUS_MARK, STATUS_STYLE, console, err_console, friendly_errors
from browserq.cli.report import report
from browserq.cli.resolve import resolve
from browserq.cli.retention import export, prune
from browserq.cli.run_commands import (
    MAX_LISTED_RUNS,
    RunStatusChoice,
    batch,
    bundled_templates_dir,
    cancel,
    demo,
    run,
    runs,
    show,
)
from browserq.cli.schedules import schedules_list, schedules_validate
from browserq.cli.templates import templates_list, templates_validate
from browserq.cli.webhooks import redeliver
from browserq.errors import BrowserqError
from browserq.settings import Settings, load_settings


def _settings_epilog() -> str:
    """Every setting with its default, unwrapped (click's \\b marker keeps the lines as they are)."""
    lines = ["Settings (environment variables; also BROWSERQ_SETTINGS_FILE, YAML or TOML):"]
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        lines.append(f"  BROWSERQ_{name.upper()} = {default!s}  — {field.description or ''}")
    return "\b\n" + "\n".join(lines)


app = typer.Typer(
    name="browserq",
    help="Durable browser automation: YAML templates of Playwright steps, run by Celery workers.",
    epilog=_settings_epilog(),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_show_locals=False,  # a traceback's locals could hold secrets
)
templates_app = typer.Typer(help="List and validate templates.", no_args_is_help=True)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)

# The order of registration is the order ``browserq --help`` lists the commands.
app.command()(run)
app.command()(enqueue)
app.command()(demo)
app.command()(locate)
app.command(context_settings=PASSTHROUGH)(worker)
app.command(context_settings=PASSTHROUGH)(beat)
app.command()(runs)
app.command()(show)
app.command()(live)
app.command("mcp")(mcp_server)
app.command()(report)
app.command()(cancel)
app.command()(resolve)
app.command()(sweep)
app.command()(prune)
app.command()(export)
app.command()(batch)
app.command()(proxies)
app.command()(doctor)
app.command("settings")(show_settings)
app.command()(keygen)

app.add_typer(templates_app, name="templates")
templates_app.command("list")(templates_list)
templates_app.command("validate")(templates_validate)

app.add_typer(db_app, name="db")
db_app.command("upgrade")(db_upgrade)

identities_app = typer.Typer(help="Named identities: one visitor each (proxy, fingerprint, storage).")
app.add_typer(identities_app, name="identities")
identities_app.command("list")(identities_list)
identities_app.command("add")(identities_add)
identities_app.command("disable")(identities_disable)

schedules_app = typer.Typer(help="Scheduled template runs (BROWSERQ_SCHEDULES_FILE), fired by beat.",
                            no_args_is_help=True)
app.add_typer(schedules_app, name="schedules")
schedules_app.command("list")(schedules_list)
schedules_app.command("validate")(schedules_validate)

webhooks_app = typer.Typer(help="Run events sent to notify URLs: send failed ones again.", no_args_is_help=True)
app.add_typer(webhooks_app, name="webhooks")
webhooks_app.command("redeliver")(redeliver)


def main() -> None:
    """The console script: refuse undecodable arguments and bad settings in one line, quiet
    the logs to warnings (the CLI shows progress itself), then run the app. Its heap is frozen
    on the way out (:mod:`browserq.heap`): a quarter of a short command's CPU was its exit."""
    heap.freeze_on_exit()
    bad = undecodable_argument(sys.argv[1:])
    if bad is not None:
        err_console.print(Text.assemble(("error:", "bold red"), f" argument '{bad}' is not valid UTF-8 text"),
                          highlight=False)
        raise SystemExit(2)
    try:
        settings = load_settings()
    except BrowserqError as exc:
        err_console.print(Text.assemble(("error:", "bold red"), f" {exc}"), highlight=False)
        raise SystemExit(2) from None
    from browserq.logs import configure_logging

    # The CLI shows progress itself; its logs only speak up for warnings unless asked to.
    if "BROWSERQ_LOG_LEVEL" not in os.environ:
        settings = settings.model_copy(update={"log_level": "WARNING"})
    configure_logging(settings)
    app()


__all__ = [
    "MAX_LISTED_RUNS",
    "STATUS_MARK",
    "STATUS_STYLE",
    "RunStatusChoice",
    "app",
    "batch",
    "beat",
    "bundled_templates_dir",
    "cancel",
    "console",
    "db_app",
    "db_upgrade",
    "demo",
    "enqueue",
    "err_console",
    "friendly_errors",
    "identities_add",
    "identities_app",
    "identities_disable",
    "identities_list",
    "keygen",
    "locate",
    "main",
    "parse_params",
    "proxies",
    "resolve",
    "run",
    "runs",
    "show",
    "show_settings",
    "sweep",
    "templates_app",
    "templates_list",
    "templates_validate",
    "worker",
    "worker_argv",
]
