"""``browserq resolve``: the way out of ``needs_review`` — a person says what happened.

A run whose side effect has an unknown outcome waits for a person. After checking the site they
resolve it as completed, as failed, or retry it from a step (see :mod:`browserq.execute.resolve`
for which steps a retry runs and skips). The decision is recorded with who and why. A retried
run that came through the broker is sent to the fleet again; one run in-process (``browserq
run``) carries on in this process, as it started.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from browserq.cli.render import console, fail, friendly_errors, print_outcome, step_printer
from browserq.cli.services import open_store, resolve_run_id
from browserq.settings import get_settings


@friendly_errors
def resolve(
    run_id: Annotated[str, typer.Argument(help="The run id, or a unique prefix of it.")],
    completed: Annotated[
        bool,
        typer.Option(
            "--completed",
            help="The side effect happened and nothing more is needed: the run ends completed.",
        ),
    ] = False,
    failed: Annotated[bool, typer.Option("--failed", help="The run ends failed.")] = False,
    retry_from: Annotated[
        str | None,
        typer.Option(
            "--retry-from",
            metavar="STEP",
            help="Run it again from its last checkpoint, starting at STEP (a path as `browserq show` lists it). "
            "A later step than the unknown one skips it; the unknown step itself needs --rerun-unknown.",
        ),
    ] = None,
    rerun_unknown: Annotated[
        bool,
        typer.Option(
            "--rerun-unknown",
            "--i-checked",
            help="With --retry-from the unknown step: you checked that it did not happen, so it runs again.",
        ),
    ] = False,
    reason: Annotated[str | None, typer.Option(help="Why (recorded with the decision).")] = None,
    by: Annotated[
        str | None, typer.Option(help="Who decides (recorded); default: the OS user.")
    ] = None,
) -> None:
    """Resolve a needs_review run: --completed, --failed or --retry-from STEP (recorded with who and why)."""
    from browserq.execute.resolve import Outcome, Review, operator_name, resolve_review

    chosen = [
        flag
        for flag, on in (
            ("--completed", completed),
            ("--failed", failed),
            ("--retry-from", retry_from is not None),
        )
        if on
    ]
    if len(chosen) != 1:
        fail(
            "say what happened with exactly one of --completed, --failed, --retry-from STEP"
            + (f" (got {' and '.join(chosen)})" if chosen else "")
        )
    outcome: Outcome = "completed" if completed else "failed" if failed else "retry"
    settings = get_settings()
    store = open_store(relay_webhooks=True)  # the run's completed/failed webhook leaves at once
    full_id = resolve_run_id(store.runs, run_id)
    review = Review(
        outcome=outcome,
        by=by or operator_name(),
        reason=reason,
        retry_from=retry_from,
        rerun_unknown=rerun_unknown,
    )
    view = resolve_review(store, settings, full_id, review)
    if view.status != "queued":
        console.print(f"run {full_id} resolved by {review.by}: {view.status}", highlight=False)
        return
    if view.task_id is None and view.queue is None:  # it ran in-process: it carries on here
        _run_here(full_id)
        return
    from browserq.tasks.sweep import send_again

    send_again(store, view, settings)
    console.print(
        f"run {full_id} resolved by {review.by}: queued again from step {retry_from}",
        highlight=False,
    )


def _run_here(run_id: str) -> None:
    """Carry on an in-process run (one `browserq run` started) in this process, to its end."""
    from browserq.execute.runtime import Runtime

    runtime = Runtime(get_settings(), listener=step_printer())
    try:
        with console.status("launching Chromium…"):
            runtime.start()
        outcome = runtime.run_to_end(run_id)
        print_outcome(outcome, runtime.store)
        console.print(
            Text.assemble("\n  details: ", (f"browserq show {run_id}", "bold")), highlight=False
        )
    finally:
        runtime.stop()
    raise typer.Exit(0 if outcome.status == "completed" else 1)


__all__ = ["resolve"]
