"""``browserq prune`` and ``browserq export``: delete finished runs past a cutoff, archive one first."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, Progress, TextColumn

from browserq.cli.render import console, err_console, fail, friendly_errors
from browserq.cli.services import open_store, resolve_run_id
from browserq.errors import BrowserqError
from browserq.settings import get_settings

if TYPE_CHECKING:
    from browserq.execute.retention import PruneReport


def _size(n: int) -> str:
    size: float = n
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"


@friendly_errors
def prune(
    older_than: Annotated[
        str, typer.Option("--older-than", help="Finished over this long ago: 30d, 12h, 90m.")
    ],
    status: Annotated[
        str | None,
        typer.Option(
            "--status", help="Comma-separated: completed, failed, cancelled (default: all three)."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be deleted; delete nothing.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete finished runs older than a cutoff, with every row about them, their artifacts and task
    results. Never a run that is queued, running, retrying, waiting for a person or needs_review."""
    from browserq.execute.retention import prunable_statuses, prune_runs
    from browserq.store.artifacts import artifact_store
    from browserq.tasks.retention import result_forgetter

    try:
        age = _parse(older_than)
        statuses = prunable_statuses(status.split(",") if status is not None else None)
    except BrowserqError as exc:
        fail(str(exc))
    settings = get_settings()
    store = open_store(settings)
    artifacts = artifact_store(settings)
    planned = prune_runs(store, artifacts, older_than=age, statuses=statuses, dry_run=True)
    if not planned.runs:
        shown = ", ".join(sorted(str(getattr(s, "value", s)) for s in statuses))
        console.print(f"nothing to prune: no run ({shown}) finished more than {older_than.strip()} ago")
        return
    _print_plan(planned, dry=dry_run)
    if dry_run:
        return
    if not yes:
        if not sys.stdin.isatty():
            fail(
                "refusing to delete without --yes: not on a terminal to ask (add --yes, or --dry-run to look first)"
            )
        if not typer.confirm(f"delete these {planned.runs} run(s) for good?", default=False):
            fail("nothing deleted")
    with Progress(
        TextColumn("pruning"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} runs"),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task("prune", total=planned.runs)
        report = prune_runs(
            store,
            artifacts,
            older_than=age,
            statuses=statuses,
            forget=result_forgetter(settings),
            progress=lambda r: bar.update(task, completed=r.runs),
        )
    console.print(
        f"deleted {report.runs} run(s), {report.rows} row(s), {report.artifact_files} artifact file(s) "
        f"({_size(report.artifact_bytes)})"
    )


def _parse(text: str) -> timedelta:
    from browserq.execute.retention import parse_duration

    return parse_duration(text)


def _print_plan(planned: PruneReport, *, dry: bool) -> None:
    verb = "would delete" if dry else "to delete"
    per_status = ", ".join(f"{s} {n}" for s, n in sorted(planned.by_status.items())) or "none"
    console.print(
        f"{verb}: {planned.runs} run(s) ({per_status}); {planned.artifact_files} artifact file(s), "
        f"{_size(planned.artifact_bytes)}"
    )


@friendly_errors
def export(
    run_id: Annotated[str, typer.Argument(help="The run to archive (a unique prefix will do).")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="The file (default: run-<id>.zip).")
    ] = None,
) -> None:
    """Write one zip with the run, its steps, transitions, handoffs, webhook deliveries and artifacts."""
    from browserq.execute.export import export_run
    from browserq.store.artifacts import artifact_store

    settings = get_settings()
    store = open_store(settings)
    full = resolve_run_id(store.runs, run_id)
    target = output or Path(f"run-{full}.zip")
    count = export_run(store, artifact_store(settings), full, target)
    console.print(f"wrote {target} ({count} artifact file(s))")


__all__ = ["export", "prune"]
