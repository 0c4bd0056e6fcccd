"""``browserq report RUN_ID``: write one run as a self-contained HTML page (see browserq.report)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from browserq.cli.render import console, friendly_errors
from browserq.cli.services import open_store, resolve_run_id
from browserq.settings import get_settings


@friendly_errors
def report(
    run_id: Annotated[str, typer.Argument(help="The run id, or a unique prefix of it (browserq runs).")],
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Where to write the page (default: report-<run id>.html here).",
        dir_okay=False, writable=True,
    )] = None,
) -> None:
    """Write a run's report: one HTML file that opens offline — header, step timeline to scale,
    screenshots, failure snapshot, outputs and the command that opens each trace."""
    from browserq.report import build_report, write_report

    store = open_store()
    full_id = resolve_run_id(store.runs, run_id)
    target = output if output is not None else Path(f"report-{full_id}.html")
    try:
        written = write_report(build_report(store, get_settings(), full_id), target).resolve()
    except OSError as exc:
        raise ValueError(f"could not write the report to {target}: {exc.strerror or exc}") from None
    console.print(Text.assemble(("report ", "bold"), str(written)), highlight=False, soft_wrap=True)
    console.print(written.as_uri(), highlight=False, soft_wrap=True)
