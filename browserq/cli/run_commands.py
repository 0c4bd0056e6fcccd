"""Commands about runs: run one in this process, the demo, and inspecting runs and batches.

``run`` and ``demo`` execute in-process through the same Runtime a worker uses (no broker);
``runs``, ``show``, ``cancel`` and ``batch`` read and write the run store.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from browserq.cli.params import parse_params
from browserq.cli.render import (
    console,
    friendly_errors,
    plain,
    print_outcome,
    runs_plain,
    runs_table,
    show_plain,
    show_run,
    status_text,
    step_printer,
)
from browserq.cli.services import masked_db, open_store, resolve_run_id
from browserq.cli.terminal import json_text
from browserq.errors import BrowserqError
from browserq.settings import Settings, get_settings

#: The installed ``browserq`` package (the bundled templates sit inside it, or next to it).
PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: The most runs ``browserq runs -n`` lists at once.
MAX_LISTED_RUNS = 100_000
#: ``runs --status`` choices: store.models.RunStatus's values (a test keeps them equal), spelled
#: out so that ``--help`` and ``keygen`` need not import SQLAlchemy.
class RunStatusChoice(StrEnum):
    queued = "queued"
    running = "running"
    retrying = "retrying"
    completed = "completed"
    failed = "failed"
    cancelled = "cancelled"
    needs_review = "needs_review"
    waiting_for_human = "waiting_for_human"


@friendly_errors
def run(
    template: Annotated[str, typer.Argument(help="Template reference: name, name@1.2 or name@1.2.0.")],
    param: Annotated[list[str], typer.Option(
        "--param", "-p",
        help="A parameter, key=value (repeatable). key=@FILE reads the value from a file, key=@- from "
        "stdin (keeps secrets out of `ps`); key=@@x is the literal value @x.",
    )] = [],  # noqa: B006
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON only.")] = False,
    identity: Annotated[str | None, typer.Option(help="Run as this named identity.")] = None,
    identity_pool: Annotated[str | None, typer.Option(help="Run as an identity from this pool.")] = None,
) -> None:
    """Run a template in this process (no broker), recording it like a worker would. Ctrl-C
    (or SIGTERM) stops the run, recorded as cancelled (exit 130, or 143); a second one at once."""
    from browserq.cli.stopping import SignalStop
    from browserq.execute.runtime import Runtime

    settings = get_settings()
    runtime = Runtime(settings, listener=step_printer(not as_json))
    stop = SignalStop(runtime.store)
    try:
        with stop.installed():
            if not as_json:
                console.print(Text.assemble(("browserq run", "bold"), f" {template}  ",
                                            (f"store: {masked_db(settings)}", "dim")))
                with console.status("launching Chromium…"):
                    runtime.start()
            else:
                runtime.start()
            prepared = runtime.submit_local(template, parse_params(param), identity=identity,
                                            identity_pool=identity_pool)
            stop.watch(prepared.run_id)
            outcome = runtime.run_to_end(prepared.run_id, secrets=prepared.secret_values)
        if as_json:
            print(json_text(outcome.as_result(), indent=2))
        else:
            print_outcome(outcome, runtime.store)
            console.print(Text.assemble("\n  details: ", (f"browserq show {outcome.run_id}", "bold")),
                          highlight=False)
    finally:
        runtime.stop()
    if outcome.status == "cancelled" and stop.exit_code is not None:
        raise typer.Exit(stop.exit_code)
    raise typer.Exit(0 if outcome.status == "completed" else 1)


@friendly_errors
def demo(
    serve: Annotated[bool, typer.Option(help="Keep the demo site running afterwards.")] = False,
) -> None:
    """Run the bundled example templates against a bundled demo site on 127.0.0.1, offline."""
    from browserq.demo.site import DemoSite
    from browserq.execute.runtime import Runtime

    templates_dir = bundled_templates_dir()
    settings = get_settings()
    if not settings.templates_dir.is_dir() or not any(settings.templates_dir.glob("*.y*ml")):
        settings = settings.model_copy(update={"templates_dir": templates_dir})
    plan = [
        ("quotes", "pagination: 5 pages of quotes", lambda url: {"start_url": f"{url}/quotes/"}),
        ("login_form", "log in, fill and send a form", lambda url: {"base_url": url, "password": "s3cret-pass"}),
        ("infinite_scroll", "infinite scroll to the end", lambda url: {"start_url": f"{url}/scroll"}),
    ]
    results = []
    with DemoSite() as site:
        console.print(Text.assemble(("browserq demo", "bold"), f"  site: {site.url}  store: {masked_db(settings)}"))
        runtime = Runtime(settings, listener=step_printer())
        try:
            with console.status("launching Chromium…"):
                runtime.start()
            for name, what, params in plan:
                console.rule(Text.assemble((name, "bold"), f" — {what}"))
                outcome = runtime.run_local(name, params(site.url))
                print_outcome(outcome, runtime.store)
                results.append(outcome)
        finally:
            runtime.stop()
        _demo_summary(results, settings)
        if serve:
            console.print(f"\nDemo site still serving at {site.url} — Ctrl-C to stop.")
            try:
                import time

                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
    raise typer.Exit(0 if all(r.status == "completed" for r in results) else 1)


def _demo_summary(results: list[Any], settings: Settings) -> None:
    table = Table(title="Demo runs", title_justify="left")
    for column in ("run", "status", "outputs"):
        table.add_column(column)
    for outcome in results:
        summary = ", ".join(
            f"{k}: {len(v)} items" if isinstance(v, list) else f"{k}: {str(v)[:40]}" for k, v in outcome.outputs.items()
        )
        table.add_row(outcome.run_id, status_text(outcome.status), summary)
    console.print()
    console.print(table)
    console.print(f"Records:   {masked_db(settings)}   (browserq runs, browserq show RUN_ID)")
    console.print(f"Artifacts: {settings.artifacts_url or settings.artifacts_dir.resolve()}")


def bundled_templates_dir() -> Path:
    """The example templates: installed inside the package, or the repository's templates/."""
    for candidate in (PACKAGE_DIR / "_templates", PACKAGE_DIR.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise BrowserqError("the bundled example templates are missing from this installation")


# --- inspecting --------------------------------------------------------------------------------
@friendly_errors
def runs(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=MAX_LISTED_RUNS, help="How many runs.")] = 20,
    status: Annotated[RunStatusChoice | None, typer.Option(case_sensitive=False, help="Only runs in this status.")] = None,
    template: Annotated[str | None, typer.Option(help="Only runs of this template name.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the runs as a JSON list.")] = False,
    kind: Annotated[str | None, typer.Option(help="Only runs of this kind: 'session' (agent sessions).")] = None,
) -> None:
    """List recent runs, newest first (tab-separated, full values, when stdout is not a terminal)."""
    if kind is not None:
        from browserq.sessions.template import SESSION_TEMPLATE

        if kind != "session" or template not in (None, SESSION_TEMPLATE):
            raise typer.BadParameter("--kind takes 'session' (a session's runs are of template 'session')")
        template = SESSION_TEMPLATE
    rows = open_store().runs.list_runs(limit=limit, status=status.value if status else None, template=template)
    if as_json:
        print(json_text([_run_json(r) for r in rows], indent=2, default=str))
        return
    if plain():
        runs_plain(rows)
        return
    runs_table(rows)


def _run_json(run: Any) -> dict[str, Any]:
    """A run as ``runs --json`` lists it: every column but the encrypted secrets and the
    checkpoint (browser storage; ``show --json`` has it); the notify URL by host only."""
    from browserq.cli.human import run_fields

    return run_fields(run, drop=("secrets", "checkpoint"))


@friendly_errors
def show(
    run_id: Annotated[str, typer.Argument(help="The run id, or a unique prefix of it (browserq runs).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print run, steps and artifacts as JSON.")] = False,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="While the run is queued or running, "
                                         "show its progress live (on stderr); then show it.")] = False,
) -> None:
    """Show a run: its outcome, the timeline of every step attempt, and its artifacts."""
    store = open_store()
    run_id = resolve_run_id(store.runs, run_id)
    if follow:
        from browserq.cli.follow import follow_run

        follow_run(store, run_id)
    run_view = store.runs.get_run(run_id)
    assert run_view is not None
    steps = store.steps.steps(run_id)
    artifacts = store.steps.artifacts(run_id)
    if as_json:
        from dataclasses import asdict

        from browserq.cli.human import human_loop_data, run_fields

        run_data = run_fields(run_view, drop=("secrets",))
        print(json_text({"run": run_data, "steps": [asdict(s) for s in steps],
                         "artifacts": [asdict(a) for a in artifacts], **human_loop_data(store, run_view)},
                        indent=2, default=str))
        return
    from browserq.cli.human import print_handoffs

    if plain():
        show_plain(store, run_view, steps, artifacts)
    else:
        show_run(store, run_view, steps, artifacts)
    print_handoffs(store, run_view)


@friendly_errors
def cancel(
    run_id: Annotated[str, typer.Argument(help="The run id, or a unique prefix of it.")],
    reason: Annotated[str, typer.Option(help="Recorded with the run.")] = "cancelled by operator",
) -> None:
    """Cancel a queued, running or waiting run. A run its worker holds stops at its next lease
    renewal; one whose process is gone (or whose lease expired) is cancelled at once."""
    from browserq.cli.stopping import cancel_if_orphaned
    from browserq.store.states import FINISHED

    store = open_store(relay_webhooks=True)  # the run's cancelled webhook leaves at once
    full_id = resolve_run_id(store.runs, run_id)
    before = store.runs.get_run(full_id)
    if before is not None and before.status in FINISHED:
        console.print(f"run {full_id} already ended: {before.status}")
        return
    view = store.cancellation.request_cancel(full_id, reason=reason)
    if view.status in ("running", "waiting_for_human"):
        view = cancel_if_orphaned(store, view, reason) or view
    if view.status == "cancelled":
        console.print(f"run {full_id} cancelled")
    elif view.cancel_requested_at is not None and view.status in ("running", "waiting_for_human"):
        console.print(f"run {full_id} is {view.status}: cancellation requested, it stops within about 2 s")
    else:
        console.print(f"run {full_id} already ended: {view.status}")


@friendly_errors
def batch(batch_id: Annotated[str, typer.Argument(help="The batch id run_batch returned.")]) -> None:
    """Show a batch: counts per status, success rate, circuit breaker."""
    summary = open_store().batches.batch_summary(batch_id)
    table = Table(title=f"Batch {batch_id}", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("total", "queued", "running", "completed", "failed", "needs_review", "cancelled", "success"):
        table.add_column(column, justify="right")
    rate = f"{summary.success_rate:.0%}" if summary.success_rate is not None else "-"
    table.add_row(*(str(getattr(summary, c)) for c in
                    ("total", "queued", "running", "completed", "failed", "needs_review", "cancelled")), rate)
    console.print(table)
    if summary.breaker_tripped_at:
        console.print(f"circuit breaker tripped: {summary.breaker_reason}", style="red")
