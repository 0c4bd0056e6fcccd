"""``browserq templates``: list the templates directory and validate template files.

Both build the registry with :meth:`TemplateRegistry.from_settings`, so they refuse exactly what
the producer refuses (selector length, repeat bound and every other settings-derived limit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from browserq.cli.render import console, err_console, friendly_errors
from browserq.errors import BrowserqError
from browserq.settings import get_settings


@friendly_errors
def templates_list() -> None:
    """List the templates in BROWSERQ_TEMPLATES_DIR, and files that fail to load."""
    from browserq.templates import TemplateRegistry

    settings = get_settings()
    registry = TemplateRegistry.from_settings(settings)
    table = Table(title=f"Templates in {settings.templates_dir}", title_justify="left")
    for column in ("name", "version", "steps", "params", "description"):
        table.add_column(column, overflow="fold")
    for loaded in registry.list():
        t = loaded.template
        table.add_row(t.name, t.version, str(len(t.steps)), ", ".join(t.params), t.description or "")
    errors = registry.errors()
    for path, error in errors.items():  # broken files stay visible, under the name they declare
        table.add_row(Text(error.name or path.stem, style="red"), error.version or "?", "", "",
                      Text(f"✗ invalid: {path.name} (see below)", style="red"))
    console.print(table)
    for path, error in errors.items():
        err_console.print(Text.assemble((f"✗ {path}", "red"), f": {error}"), highlight=False)


@friendly_errors
def templates_validate(
    paths: Annotated[list[Path] | None, typer.Argument(help="Files to check (default: the templates dir).")] = None,
) -> None:
    """Validate template files; exits 1 if any is invalid."""
    from browserq.templates import TemplateRegistry

    settings = get_settings()
    files = list(paths or []) or sorted(
        p for p in settings.templates_dir.rglob("*") if p.suffix in {".yaml", ".yml"}
    )
    outcome = TemplateRegistry.from_settings(settings).validate_files(files)
    bad = 0
    for path, result in outcome.items():
        if isinstance(result, BrowserqError):  # TemplateInvalid, duplicates included
            bad += 1
            err_console.print(Text.assemble(("✗", "red"), f" {result}"), highlight=False)
        else:
            console.print(
                Text.assemble(("✓", "green"), f" {path}  {result.ref}  sha256:{result.canonical_hash[:12]}"),
                highlight=False,
            )
    raise typer.Exit(1 if bad else 0)
