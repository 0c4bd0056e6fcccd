"""How the CLI prints: status colours, the step printer, the outcome, and the run views.

On a terminal, Rich tables; when stdout is a pipe or a file (:func:`plain`), tab-separated lines
with full values (nothing folded or cut), so scripts can read them. Markup is off everywhere, and
no control character a page put in its text reaches the terminal (:mod:`browserq.cli.terminal`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, ParamSpec, TypeVar

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from browserq.cli.terminal import inert, inert_console, json_text
from browserq.errors import BrowserqError, StoreError
from browserq.settings import get_settings

if TYPE_CHECKING:
    from browserq.store import Store
    from browserq.store.artifacts import ArtifactStore

# The store (SQLAlchemy) is imported by the functions that print what it holds, not with this
# module: every command imports it, and ``--help`` or ``templates list`` never open the store.

P = ParamSpec("P")
R = TypeVar("R")

#: Markup is off: every value printed (params with ``[secret:…]``, page text and errors with
#: brackets) is shown as it is, never read as Rich markup. Style with ``Text``/``style=`` instead.
#: Control characters in what they print (page text) are made inert (:mod:`browserq.cli.terminal`).
console = inert_console()
err_console = inert_console(stderr=True, soft_wrap=True)

STATUS_STYLE = {
    "succeeded": "green",
    "completed": "green",
    "skipped": "yellow",
    "failed": "red",
    "cancelled": "magenta",
    "queued": "cyan",
    "running": "blue",
    "started": "blue",
    "needs_review": "bold yellow",
    "waiting_for_human": "bold yellow",
}
STATUS_MARK = {"succeeded": "✓", "skipped": "↷", "failed": "✗"}


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` on stderr and leave with ``code`` (2: the input was refused)."""
    err_console.print(Text.assemble(("error:", "bold red"), " ", message), highlight=False)
    raise typer.Exit(code)


def friendly_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn browserq's errors, and input the layers below refused (ValueError), into a one-line
    message and exit code 2 — never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (BrowserqError, ValueError) as exc:
            if isinstance(exc, StoreError):
                from browserq.store.errors import StoreUnavailable

                if isinstance(exc, StoreUnavailable):
                    fail(f"{exc} (start the database or fix BROWSERQ_DATABASE_URL; `browserq doctor` "
                         "checks every service)")
            fail(str(exc))

    return wrapper


def plain() -> bool:
    """stdout is not a terminal (a pipe, a file): print full values in plain lines, no tables
    squeezed to the default 80 columns."""
    return not console.is_terminal


def _flat(value: Any) -> str:
    """One tab-separated field: no tabs or line breaks inside, no control character."""
    text = "" if value is None else str(value)
    return inert(" ".join(text.replace("\t", " ").splitlines()))


def tsv(*fields: Any) -> None:
    """Print one tab-separated line (each field flattened to one line)."""
    print("\t".join(_flat(f) for f in fields))


def iso(value: Any) -> str:
    """A timestamp in ISO 8601, or '' when there is none (plain output has no placeholders)."""
    return value.isoformat() if value is not None else ""


def warning_text(warning: dict[str, Any]) -> str:
    """A recorded warning as one line: ``step 3: CODE: message``."""
    where = f"step {warning['step']}: " if warning.get("step") is not None else ""
    return f"{where}{warning.get('code')}: {warning.get('message')}"


def skip_reason(step: Any) -> str:
    """Why a step was skipped (``when: absent '#banner': ...``), or ''."""
    output = step.output if step.status == "skipped" else None
    return str(output["skipped"]) if isinstance(output, dict) and "skipped" in output else ""


def status_text(value: str | None) -> Text:
    """A status in its colour (STATUS_STYLE)."""
    value = value or ""
    return Text(value, style=STATUS_STYLE.get(value, ""))


def ms(value: float | None) -> str:
    """A duration for people: milliseconds up to 10 s, then seconds."""
    if value is None:
        return ""
    return f"{value:.0f} ms" if value < 10_000 else f"{value / 1000:.1f} s"


# --- running -----------------------------------------------------------------------------------
def step_printer(verbose: bool = True) -> Callable[[Any], None]:
    """The runtime's step listener: one line per finished step attempt (nothing when not verbose)."""

    def show(event: Any) -> None:
        if not verbose:
            return
        mark = STATUS_MARK.get(event.status, "·")
        style = STATUS_STYLE.get(event.status, "")
        label = (event.step_id or event.action)[:20]
        retry = f" (attempt {event.attempt})" if event.attempt > 1 else ""
        line = Text.assemble(
            (f" {mark} ", style),
            (f"{event.step_path:<10}", "dim"),
            (f"{label:<21}", "bold"),
            (f"{event.action:<11}", ""),
            (f"{ms(event.duration_ms):>9}", "dim"),
            (retry, "yellow"),
        )
        if event.error_code:
            line.append(f"  {event.error_code}: {event.error_message}", style="red")
        console.print(line, highlight=False, soft_wrap=plain())

    return show


def print_outcome(outcome: Any, store: Store) -> None:
    """A finished run: status, duration, error, warnings, then its outputs."""
    run = store.runs.get_run(outcome.run_id)
    style = STATUS_STYLE.get(outcome.status, "")
    piped = plain()  # lines are not folded at 80 columns, outputs are whole JSON (like `show`)
    console.print()
    console.print(Text.assemble(("Run ", "bold"), (outcome.run_id, "cyan"), " ", (outcome.status.upper(), f"bold {style}")))
    if run is not None and run.started_at and run.finished_at:
        console.print(f"  took {(run.finished_at - run.started_at).total_seconds():.2f} s", style="dim")
    if outcome.error_code:
        console.print(f"  {outcome.error_code} at step {outcome.error_step_path}: {outcome.error_message}",
                      style="red", soft_wrap=piped)
    for warning in outcome.warnings:
        console.print(f"  warning: {warning_text(warning)}", style="yellow", highlight=False, soft_wrap=piped)
    for name, value in (outcome.outputs or {}).items():
        if piped:
            tsv(name, json_text(value, default=str))
        else:
            console.print(output_table(name, value))


def output_table(name: str, value: Any, limit: int = 10) -> Any:
    """A list of records as a table of its first ``limit`` rows; any other value as one line."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        table = Table(title=f"{name} ({len(value)} records)", title_justify="left", show_lines=False)
        columns = list(dict.fromkeys(k for row in value for k in row))
        for column in columns:
            table.add_column(column, overflow="fold", max_width=60)
        for row in value[:limit]:
            table.add_row(*[_cell(row.get(c)) for c in columns])
        if len(value) > limit:
            table.caption = f"… {len(value) - limit} more (browserq show --json)"
        return table
    return Text.assemble((f"{name}: ", "bold"), _cell(value))


def _cell(value: Any) -> str:
    """A value inside one table cell."""
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


# --- inspecting --------------------------------------------------------------------------------
def runs_plain(rows: list[Any]) -> None:
    """``runs`` for a pipe or a file: a header line, then one tab-separated line per run."""
    tsv("run_id", "template", "status", "attempt", "created_utc", "took_s", "error", "warnings")
    for r in rows:
        took = (r.finished_at - r.started_at).total_seconds() if r.finished_at and r.started_at else None
        error = ": ".join(p for p in (r.error_code, r.error_message) if p)
        tsv(r.id, f"{r.template_name}@{r.template_version}", r.status, r.attempt, iso(r.created_at),
            f"{took:.2f}" if took is not None else "", error,
            "; ".join(warning_text(w) for w in r.warnings or []))


def runs_table(rows: list[Any]) -> None:
    """``runs`` on a terminal: the newest runs, ids shortened to 12 characters."""
    table = Table(title=f"Recent runs ({len(rows)})  — `browserq show ID` takes any unique prefix",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("run id", "template", "status", "try", "created UTC", "took", "error"):
        table.add_column(column, no_wrap=column != "error", overflow="fold")
    for r in rows:
        took = (r.finished_at - r.started_at).total_seconds() if r.finished_at and r.started_at else None
        table.add_row(
            r.id[:12],
            f"{r.template_name}@{r.template_version}",
            status_text(r.status),
            str(r.attempt),
            r.created_at.strftime("%m-%d %H:%M:%S"),
            f"{took:.2f} s" if took is not None else "",
            f"{r.error_code}" if r.error_code else
            Text(", ".join(f"⚠ {w.get('code')}" for w in r.warnings or []), style="yellow"),
        )
    console.print(table)


def trace_commands(artifacts: list[Any]) -> list[str]:
    """``playwright show-trace <file on this host>`` for each trace of the run (an object
    store's trace is fetched to a local file first, by the artifact store)."""
    from browserq.report.evidence import trace

    files = _artifact_store()
    return [trace(files, a, "").command for a in artifacts if a.kind == "trace"]


def show_run(store: Store, run_view: Any, steps: list[Any], artifacts: list[Any]) -> None:
    """``show`` on a terminal: the run's facts, its history, then tables of steps and artifacts."""
    console.print(Text.assemble(("Run ", "bold"), (run_view.id, "cyan"), "  ", status_text(run_view.status)))
    console.print(f"  template  {run_view.template_name}@{run_view.template_version}")
    console.print(f"  content   sha256:{run_view.template_hash or '- (recorded before 0004)'}", highlight=False)
    console.print(f"  params    {json.dumps(run_view.params, ensure_ascii=False)}", highlight=False)
    console.print(f"  worker    {run_view.worker or '-'}   attempt {run_view.attempt}")
    console.print(f"  queued    {run_view.queued_at or run_view.created_at}   started {run_view.started_at or '-'}   finished {run_view.finished_at or '-'}")
    if run_view.error_code:
        console.print(f"  error     {run_view.error_code} at step {run_view.error_step_path}: {run_view.error_message}", style="red")
    for warning in run_view.warnings or []:
        console.print(f"  warning   {warning_text(warning)}", style="yellow", highlight=False)
    history = store.transitions.transitions(run_view.id)
    if history:
        console.print("  history   " + "  →  ".join(
            f"{t.to_status} ({t.at.strftime('%H:%M:%S')}{', ' + t.reason if t.reason and (t.to_status != 'queued' or t.from_status == 'needs_review') else ''})"
            for t in history), highlight=False)
    for command in trace_commands(artifacts):
        console.print(Text.assemble("  trace     ", (command, "bold")), highlight=False, soft_wrap=True)
    from browserq.report.session import is_session, target_of

    session = is_session(run_view)  # a session's steps are its commands: each one's target shown
    table = Table(title="Commands" if session else "Steps", title_justify="left")
    for column in ("step", "id", "action", *(("target",) if session else ()), "try", "duration", "status",
                   "error", "url after"):
        table.add_column(column, overflow="fold")
    for s in steps:
        table.add_row(
            s.step_path, s.step_id or "", s.action, *((target_of(s.inputs),) if session else ()), str(s.attempt),
            ms(s.duration_ms), status_text(s.status), _step_notes(s), s.url_after or "",
        )
    console.print(table)
    if artifacts:
        files = _artifact_store()
        by_step = {s.id: s.step_path for s in steps}
        atable = Table(title="Artifacts", title_justify="left")
        for column in ("kind", "step", "size", "path"):
            atable.add_column(column, overflow="fold")
        for a in artifacts:
            atable.add_row(a.kind, by_step.get(a.step_attempt_id, "") if a.step_attempt_id else "",
                           f"{a.size:,} B", files.location(a.path))
        console.print(atable)
    if run_view.outputs:
        for name, value in run_view.outputs.items():
            console.print(output_table(name, value))


def _step_notes(s: Any) -> Text:
    """The error (or the warnings) of a step attempt, then the dialogs it answered."""
    if s.error_code:
        notes = Text(f"{s.error_code}: {s.error_message}")
    elif skip_reason(s):
        notes = Text(skip_reason(s), style="yellow")
    else:
        notes = Text("\n".join(f"⚠ {warning_text(w)}" for w in s.warnings or []), style="yellow")
    for event in getattr(s, "events", None) or []:
        notes.append(("\n" if notes.plain else "") + f"💬 {_event_text(event)}", style="cyan")
    return notes


def show_plain(store: Store, run: Any, steps: list[Any], artifacts: list[Any]) -> None:
    """``show`` for a pipe or a file: one ``key<TAB>value`` line per fact, then tab-separated
    sections with a header line each — full values, nothing folded or cut."""
    tsv("run", run.id)
    tsv("status", run.status)
    tsv("template", f"{run.template_name}@{run.template_version}")
    tsv("content", f"sha256:{run.template_hash}" if run.template_hash else "- (recorded before 0004)")
    tsv("params", json_text(run.params))
    tsv("worker", run.worker or "")
    tsv("attempt", run.attempt)
    tsv("queued", iso(run.queued_at or run.created_at))
    tsv("started", iso(run.started_at))
    tsv("finished", iso(run.finished_at))
    if run.error_code:
        tsv("error", f"{run.error_code} at step {run.error_step_path}: {run.error_message}")
    for warning in run.warnings or []:
        tsv("warning", warning_text(warning))
    history = store.transitions.transitions(run.id)
    if history:
        tsv("history", "  →  ".join(
            f"{t.to_status} ({iso(t.at)}{', ' + t.reason if t.reason and (t.to_status != 'queued' or t.from_status == 'needs_review') else ''})"
            for t in history))
    for command in trace_commands(artifacts):
        tsv("trace_command", command)
    from browserq.report.session import is_session, target_of

    session = is_session(run)  # a session's steps are its commands: each one's target shown
    print("\nCommands" if session else "\nSteps")
    tsv("step", "id", "action", *(("target",) if session else ()), "try", "duration_ms", "status", "error",
        "warnings", "url_after")
    for s in steps:
        tsv(s.step_path, s.step_id or "", s.action, *((target_of(s.inputs),) if session else ()), s.attempt,
            f"{s.duration_ms:.0f}" if s.duration_ms is not None else "", s.status,
            f"{s.error_code}: {s.error_message}" if s.error_code else skip_reason(s),
            "; ".join(warning_text(w) for w in s.warnings or []), s.url_after or "")
    events = [(s, e) for s in steps for e in getattr(s, "events", None) or []]
    if events:
        print("\nEvents")
        tsv("step", "try", "event")
        for s, event in events:
            tsv(s.step_path, s.attempt, _event_text(event))
    if artifacts:
        files = _artifact_store()
        by_step = {s.id: s.step_path for s in steps}
        print("\nArtifacts")
        tsv("kind", "step", "size", "path")
        for a in artifacts:
            tsv(a.kind, by_step.get(a.step_attempt_id, "") if a.step_attempt_id else "", a.size,
                files.location(a.path))
    if run.outputs:
        print("\nOutputs")
        for name, value in run.outputs.items():
            tsv(name, json_text(value, default=str))


def _artifact_store() -> ArtifactStore:
    """The settings' artifact store (imported when a run's artifacts are printed)."""
    from browserq.store.artifacts import artifact_store

    return artifact_store(get_settings())


def _event_text(event: dict[str, Any]) -> str:
    """An answered dialog's one line (:func:`browserq.store.views.event_text`)."""
    from browserq.store.views import event_text

    return event_text(event)
