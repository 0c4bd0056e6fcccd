"""The ``browserq`` command: run templates in-process, start workers, inspect runs."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from browserq.errors import BrowserqError
from browserq.settings import Settings, get_settings, load_settings

F = TypeVar("F", bound=Callable[..., Any])

#: Markup is off: every value printed (params with ``[secret:…]``, page text and errors with
#: brackets) is shown as it is, never read as Rich markup. Style with ``Text``/``style=`` instead.
console = Console(markup=False)
err_console = Console(stderr=True, markup=False, soft_wrap=True)


def _settings_epilog() -> str:
    """Every setting with its default, unwrapped (click's \\b marker keeps the lines as they are)."""
    lines = ["Settings (environment variables; also BROWSERQ_SETTINGS_FILE, YAML or TOML):"]
    for name, field in Settings.model_fields.items():
        default = field.default if field.default_factory is None else field.default_factory()
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
app.add_typer(templates_app, name="templates")
app.add_typer(db_app, name="db")

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
}
STATUS_MARK = {"succeeded": "✓", "skipped": "↷", "failed": "✗"}
#: The most runs ``browserq runs -n`` lists at once.
MAX_LISTED_RUNS = 100_000
#: ``runs --status`` choices: store.models.RunStatus's values (a test keeps them equal), spelled
#: out so that ``--help`` and ``keygen`` need not import SQLAlchemy.
RunStatusChoice = StrEnum(
    "RunStatusChoice",
    {s: s for s in ("queued", "running", "retrying", "completed", "failed", "cancelled", "needs_review")},
)


def _fail(message: str, code: int = 2) -> None:
    err_console.print(Text.assemble(("error:", "bold red"), " ", message), highlight=False)
    raise typer.Exit(code)


def friendly_errors(fn: F) -> F:
    """Turn browserq's errors, and input the layers below refused (ValueError), into a one-line
    message and exit code 2 — never a traceback."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (BrowserqError, ValueError) as exc:
            _fail(str(exc))

    return wrapper  # type: ignore[return-value]


def _undecodable_argument(argv: list[str]) -> str | None:
    """The first argument that is not valid UTF-8 (Python keeps such bytes as lone surrogates,
    which every later layer — the database, the terminal — would choke on)."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return None


def _plain() -> bool:
    """stdout is not a terminal (a pipe, a file): print full values in plain lines, no tables
    squeezed to the default 80 columns."""
    return not console.is_terminal


def _flat(value: Any) -> str:
    """One tab-separated field: no tabs or line breaks inside."""
    text = "" if value is None else str(value)
    return " ".join(text.replace("\t", " ").splitlines())


def _tsv(*fields: Any) -> None:
    print("\t".join(_flat(f) for f in fields))


def _iso(value: Any) -> str:
    return value.isoformat() if value is not None else ""


def _warning_text(warning: dict[str, Any]) -> str:
    where = f"step {warning['step']}: " if warning.get("step") is not None else ""
    return f"{where}{warning.get('code')}: {warning.get('message')}"


def parse_params(pairs: list[str], stdin: Any = None) -> dict[str, Any]:
    """``-p key=value`` pairs; values stay strings and are coerced by the template's param types.

    A value can stay out of the process list (``ps`` shows every argument): ``key=@path`` reads
    it from a file, ``key=@-`` from standard input (once; one trailing newline is dropped in both
    cases). ``key=@@text`` is the literal value ``@text``.
    """
    params: dict[str, Any] = {}
    read_stdin = False
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            _fail(f"-p expects key=value, got {pair!r}")
        if value == "@-":
            if read_stdin:
                _fail(f"-p {key}=@-: standard input was already read for another parameter")
            read_stdin = True
        params[key] = _param_value(key, value, stdin or sys.stdin)
    return params


def _param_value(key: str, value: str, stdin: Any) -> str:
    """``value`` itself, or what ``@path`` / ``@-`` point to (one trailing newline dropped)."""
    if not value.startswith("@"):
        return value
    if value.startswith("@@"):
        return value[1:]
    source = value[1:]
    if source == "-":
        text = stdin.read()
    else:
        try:
            text = Path(source).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            _fail(
                f"-p {key}=@{source}: cannot read the value from file {source!r} "
                f"({exc.__class__.__name__}: {exc}); write @@… for a literal value starting with @"
            )
            raise AssertionError("unreachable") from exc
    return text.removesuffix("\n")


def _status(value: str | None) -> Text:
    value = value or ""
    return Text(value, style=STATUS_STYLE.get(value, ""))


def _ms(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.0f} ms" if value < 10_000 else f"{value / 1000:.1f} s"


# --- running -----------------------------------------------------------------------------------
def _step_printer(verbose: bool = True) -> Callable[[Any], None]:
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
            (f"{_ms(event.duration_ms):>9}", "dim"),
            (retry, "yellow"),
        )
        if event.error_code:
            line.append(f"  {event.error_code}: {event.error_message}", style="red")
        console.print(line, highlight=False)

    return show


def _print_outcome(outcome: Any, store: Any) -> None:
    run = store.get_run(outcome.run_id)
    style = STATUS_STYLE.get(outcome.status, "")
    console.print()
    console.print(Text.assemble(("Run ", "bold"), (outcome.run_id, "cyan"), " ", (outcome.status.upper(), f"bold {style}")))
    if run is not None and run.started_at and run.finished_at:
        console.print(f"  took {(run.finished_at - run.started_at).total_seconds():.2f} s", style="dim")
    if outcome.error_code:
        console.print(f"  {outcome.error_code} at step {outcome.error_step_path}: {outcome.error_message}", style="red")
    for warning in outcome.warnings:
        console.print(f"  warning: {_warning_text(warning)}", style="yellow", highlight=False)
    for name, value in (outcome.outputs or {}).items():
        console.print(_output_table(name, value))


def _output_table(name: str, value: Any, limit: int = 10) -> Any:
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
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


@app.command()
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
    """Run a template in this process (no broker), recording it like a worker would."""
    from browserq.runtime import Runtime

    settings = get_settings()
    runtime = Runtime(settings, listener=_step_printer(not as_json))
    try:
        if not as_json:
            console.print(Text.assemble(("browserq run", "bold"), f" {template}  ",
                                        (f"store: {_masked_db(settings)}", "dim")))
            with console.status("launching Chromium…"):
                runtime.start()
        else:
            runtime.start()
        outcome = runtime.run_local(template, parse_params(param), identity=identity,
                                    identity_pool=identity_pool)
        if as_json:
            print(json.dumps(outcome.as_result(), indent=2, ensure_ascii=False))
        else:
            _print_outcome(outcome, runtime.store)
            console.print(Text.assemble("\n  details: ", (f"browserq show {outcome.run_id}", "bold")),
                          highlight=False)
    finally:
        runtime.stop()
    raise typer.Exit(0 if outcome.status == "completed" else 1)


@app.command()
@friendly_errors
def demo(
    serve: Annotated[bool, typer.Option(help="Keep the demo site running afterwards.")] = False,
) -> None:
    """Run the bundled example templates against a bundled demo site on 127.0.0.1, offline."""
    from browserq.demo.site import DemoSite
    from browserq.runtime import Runtime

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
        console.print(Text.assemble(("browserq demo", "bold"), f"  site: {site.url}  store: {_masked_db(settings)}"))
        runtime = Runtime(settings, listener=_step_printer())
        try:
            with console.status("launching Chromium…"):
                runtime.start()
            for name, what, params in plan:
                console.rule(Text.assemble((name, "bold"), f" — {what}"))
                outcome = runtime.run_local(name, params(site.url))
                _print_outcome(outcome, runtime.store)
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
        table.add_row(outcome.run_id, _status(outcome.status), summary)
    console.print()
    console.print(table)
    console.print(f"Records:   {_masked_db(settings)}   (browserq runs, browserq show RUN_ID)")
    console.print(f"Artifacts: {settings.artifacts_dir.resolve()}")


def bundled_templates_dir() -> Path:
    """The example templates: installed inside the package, or the repository's templates/."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_templates", here.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise BrowserqError("the bundled example templates are missing from this installation")


def _masked_db(settings: Settings) -> str:
    from browserq.store import mask_url

    return mask_url(settings.database_url)


# --- workers ------------------------------------------------------------------------------------
@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def worker(
    ctx: typer.Context,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", help="Worker processes (one Chromium each).")] = 2,
    loglevel: Annotated[str, typer.Option("--loglevel", "-l")] = "INFO",
) -> None:
    """Start a Celery worker configured for browserq (prefork, one browser per process).

    Extra arguments are passed to `celery worker`. `-Q other` adds queues to browserq's own (the
    runs' queue and the sweeper's); `-X QUEUE` leaves one out, except the sweeper's.
    """
    try:
        argv = worker_argv(get_settings(), concurrency, loglevel, list(ctx.args))
    except BrowserqError as exc:
        _fail(str(exc))
    os.execv(sys.executable, argv)


def _take_option(args: list[str], short: str, long: str) -> tuple[list[str], list[str]]:
    """Split ``args`` into the values of ``-S v``/``-Sv``/``--long v``/``--long=v`` and the rest."""
    values: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in (short, long):
            if i + 1 < len(args):
                values.append(args[i + 1])
            i += 2
            continue
        if arg.startswith(long + "="):
            values.append(arg[len(long) + 1:])
        elif arg.startswith(short) and not arg.startswith("--") and len(arg) > len(short):
            values.append(arg[len(short):])
        else:
            rest.append(arg)
        i += 1
    return [q.strip() for v in values for q in v.split(",") if q.strip()], rest


def worker_argv(settings: Settings, concurrency: int, loglevel: str, extra: list[str]) -> list[str]:
    """The `celery worker` command line: browserq's queues always, plus any given with -Q."""
    from browserq.celery_app import sweep_queue

    asked, extra = _take_option(extra, "-Q", "--queues")
    excluded, _ = _take_option(extra, "-X", "--exclude-queues")
    sweeper = sweep_queue(settings)
    if sweeper in excluded:
        raise BrowserqError(
            f"the sweeper's queue {sweeper!r} cannot be excluded: it re-sends runs whose worker died "
            "(leave it out of -X; -X can exclude the runs' queue)"
        )
    queues = list(dict.fromkeys([settings.queue, sweeper, *asked]))
    return [
        sys.executable, "-m", "celery", "-A", "browserq.celery_app:app", "worker",
        "--pool", "prefork", "--concurrency", str(concurrency), "--loglevel", loglevel,
        "-Q", ",".join(queues), "-E", *extra,
    ]


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def beat(ctx: typer.Context) -> None:
    """Start Celery beat (run exactly one). Extra arguments are passed to `celery beat`."""
    argv = [sys.executable, "-m", "celery", "-A", "browserq.celery_app:app", "beat", *ctx.args]
    os.execv(sys.executable, argv)


# --- inspecting --------------------------------------------------------------------------------
def _store() -> Any:
    from browserq.store import Store

    store = Store.from_settings(get_settings())
    if get_settings().auto_migrate:
        store.upgrade()
    return store


@app.command()
@friendly_errors
def runs(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=MAX_LISTED_RUNS, help="How many runs.")] = 20,
    status: Annotated[RunStatusChoice | None, typer.Option(case_sensitive=False, help="Only runs in this status.")] = None,
    template: Annotated[str | None, typer.Option(help="Only runs of this template name.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the runs as a JSON list.")] = False,
) -> None:
    """List recent runs, newest first (tab-separated, full values, when stdout is not a terminal)."""
    rows = _store().list_runs(limit=limit, status=status.value if status else None, template=template)
    if as_json:
        print(json.dumps([_run_json(r) for r in rows], indent=2, default=str, ensure_ascii=False))
        return
    if _plain():
        _tsv("run_id", "template", "status", "attempt", "created_utc", "took_s", "error", "warnings")
        for r in rows:
            took = (r.finished_at - r.started_at).total_seconds() if r.finished_at and r.started_at else None
            error = ": ".join(p for p in (r.error_code, r.error_message) if p)
            _tsv(r.id, f"{r.template_name}@{r.template_version}", r.status, r.attempt, _iso(r.created_at),
                 f"{took:.2f}" if took is not None else "", error,
                 "; ".join(_warning_text(w) for w in r.warnings or []))
        return
    table = Table(title=f"Recent runs ({len(rows)})  — `browserq show ID` takes any unique prefix",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("run id", "template", "status", "try", "created UTC", "took", "error"):
        table.add_column(column, no_wrap=column != "error", overflow="fold")
    for r in rows:
        took = (r.finished_at - r.started_at).total_seconds() if r.finished_at and r.started_at else None
        table.add_row(
            r.id[:12],
            f"{r.template_name}@{r.template_version}",
            _status(r.status),
            str(r.attempt),
            r.created_at.strftime("%m-%d %H:%M:%S"),
            f"{took:.2f} s" if took is not None else "",
            f"{r.error_code}" if r.error_code else
            Text(", ".join(f"⚠ {w.get('code')}" for w in r.warnings or []), style="yellow"),
        )
    console.print(table)


def _run_json(run: Any) -> dict[str, Any]:
    """A run as ``runs --json`` lists it: every column but the encrypted secrets and the
    checkpoint (browser storage; ``show --json`` has it)."""
    from dataclasses import asdict

    return {k: v for k, v in asdict(run).items() if k not in ("secrets", "checkpoint")}


@app.command()
@friendly_errors
def show(
    run_id: Annotated[str, typer.Argument(help="The run id, or a unique prefix of it (browserq runs).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print run, steps and artifacts as JSON.")] = False,
) -> None:
    """Show a run: its outcome, the timeline of every step attempt, and its artifacts."""
    store = _store()
    run_id = _resolve_run_id(store, run_id)
    run_view = store.get_run(run_id)
    assert run_view is not None
    steps = store.steps(run_id)
    artifacts = store.artifacts(run_id)
    if as_json:
        from dataclasses import asdict

        run_data = {k: v for k, v in asdict(run_view).items() if k != "secrets"}
        print(json.dumps({"run": run_data, "steps": [asdict(s) for s in steps],
                          "artifacts": [asdict(a) for a in artifacts]}, indent=2, default=str, ensure_ascii=False))
        return
    if _plain():
        _show_plain(store, run_view, steps, artifacts)
        return
    console.print(Text.assemble(("Run ", "bold"), (run_view.id, "cyan"), "  ", _status(run_view.status)))
    console.print(f"  template  {run_view.template_name}@{run_view.template_version}")
    console.print(f"  content   sha256:{run_view.template_hash or '- (recorded before 0004)'}", highlight=False)
    console.print(f"  params    {json.dumps(run_view.params, ensure_ascii=False)}", highlight=False)
    console.print(f"  worker    {run_view.worker or '-'}   attempt {run_view.attempt}")
    console.print(f"  queued    {run_view.queued_at or run_view.created_at}   started {run_view.started_at or '-'}   finished {run_view.finished_at or '-'}")
    if run_view.error_code:
        console.print(f"  error     {run_view.error_code} at step {run_view.error_step_path}: {run_view.error_message}", style="red")
    for warning in run_view.warnings or []:
        console.print(f"  warning   {_warning_text(warning)}", style="yellow", highlight=False)
    history = store.transitions(run_id)
    if history:
        console.print("  history   " + "  →  ".join(
            f"{t.to_status} ({t.at.strftime('%H:%M:%S')}{', ' + t.reason if t.reason and t.to_status != 'queued' else ''})"
            for t in history), highlight=False)
    table = Table(title="Steps", title_justify="left")
    for column in ("step", "id", "action", "try", "duration", "status", "error", "url after"):
        table.add_column(column, overflow="fold")
    for s in steps:
        table.add_row(
            s.step_path, s.step_id or "", s.action, str(s.attempt), _ms(s.duration_ms), _status(s.status),
            f"{s.error_code}: {s.error_message}" if s.error_code else
            Text("\n".join(f"⚠ {_warning_text(w)}" for w in s.warnings or []), style="yellow"),
            s.url_after or "",
        )
    console.print(table)
    if artifacts:
        settings = get_settings()
        by_step = {s.id: s.step_path for s in steps}
        atable = Table(title="Artifacts", title_justify="left")
        for column in ("kind", "step", "size", "path"):
            atable.add_column(column, overflow="fold")
        for a in artifacts:
            atable.add_row(a.kind, by_step.get(a.step_attempt_id, "") if a.step_attempt_id else "",
                           f"{a.size:,} B", str(settings.artifacts_dir / a.path))
        console.print(atable)
    if run_view.outputs:
        for name, value in run_view.outputs.items():
            console.print(_output_table(name, value))


def _show_plain(store: Any, run: Any, steps: list[Any], artifacts: list[Any]) -> None:
    """``show`` for a pipe or a file: one ``key<TAB>value`` line per fact, then tab-separated
    sections with a header line each — full values, nothing folded or cut."""
    _tsv("run", run.id)
    _tsv("status", run.status)
    _tsv("template", f"{run.template_name}@{run.template_version}")
    _tsv("content", f"sha256:{run.template_hash}" if run.template_hash else "- (recorded before 0004)")
    _tsv("params", json.dumps(run.params, ensure_ascii=False))
    _tsv("worker", run.worker or "")
    _tsv("attempt", run.attempt)
    _tsv("queued", _iso(run.queued_at or run.created_at))
    _tsv("started", _iso(run.started_at))
    _tsv("finished", _iso(run.finished_at))
    if run.error_code:
        _tsv("error", f"{run.error_code} at step {run.error_step_path}: {run.error_message}")
    for warning in run.warnings or []:
        _tsv("warning", _warning_text(warning))
    history = store.transitions(run.id)
    if history:
        _tsv("history", "  →  ".join(
            f"{t.to_status} ({_iso(t.at)}{', ' + t.reason if t.reason and t.to_status != 'queued' else ''})"
            for t in history))
    print("\nSteps")
    _tsv("step", "id", "action", "try", "duration_ms", "status", "error", "warnings", "url_after")
    for s in steps:
        _tsv(s.step_path, s.step_id or "", s.action, s.attempt,
             f"{s.duration_ms:.0f}" if s.duration_ms is not None else "", s.status,
             f"{s.error_code}: {s.error_message}" if s.error_code else "",
             "; ".join(_warning_text(w) for w in s.warnings or []), s.url_after or "")
    if artifacts:
        settings = get_settings()
        by_step = {s.id: s.step_path for s in steps}
        print("\nArtifacts")
        _tsv("kind", "step", "size", "path")
        for a in artifacts:
            _tsv(a.kind, by_step.get(a.step_attempt_id, "") if a.step_attempt_id else "", a.size,
                 settings.artifacts_dir / a.path)
    if run.outputs:
        print("\nOutputs")
        for name, value in run.outputs.items():
            _tsv(name, json.dumps(value, ensure_ascii=False, default=str))


@app.command()
@friendly_errors
def cancel(
    run_id: Annotated[str, typer.Argument(help="The run id, or a unique prefix of it.")],
    reason: Annotated[str, typer.Option(help="Recorded with the run.")] = "cancelled by operator",
) -> None:
    """Cancel a queued or running run. A running run stops at its next lease renewal."""
    store = _store()
    full_id = _resolve_run_id(store, run_id)
    before = store.get_run(full_id)
    if before is not None and before.status in {"completed", "failed", "cancelled", "needs_review"}:
        console.print(f"run {full_id} already ended: {before.status}")
        return
    view = store.request_cancel(full_id, reason=reason)
    if view.status == "cancelled":
        console.print(f"run {full_id} cancelled")
    elif view.cancel_requested_at is not None and view.status == "running":
        console.print(f"run {full_id} is running: cancellation requested, it stops within about 2 s")
    else:
        console.print(f"run {full_id} already ended: {view.status}")


@app.command()
@friendly_errors
def sweep() -> None:
    """Re-enqueue stuck runs now (expired leases, lost messages); beat does this periodically."""
    from browserq.celery_app import _producer_services, sweep_stuck_runs

    _registry, store, _box = _producer_services()
    count = sweep_stuck_runs(store, get_settings())
    console.print(f"re-enqueued {count} run(s)")


@app.command()
@friendly_errors
def batch(batch_id: Annotated[str, typer.Argument(help="The batch id run_batch returned.")]) -> None:
    """Show a batch: counts per status, success rate, circuit breaker."""
    summary = _store().batch_summary(batch_id)
    table = Table(title=f"Batch {batch_id}", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("total", "queued", "running", "completed", "failed", "needs_review", "cancelled", "success"):
        table.add_column(column, justify="right")
    rate = f"{summary.success_rate:.0%}" if summary.success_rate is not None else "-"
    table.add_row(*(str(getattr(summary, c)) for c in
                    ("total", "queued", "running", "completed", "failed", "needs_review", "cancelled")), rate)
    console.print(table)
    if summary.breaker_tripped_at:
        console.print(f"circuit breaker tripped: {summary.breaker_reason}", style="red")


def _resolve_run_id(store: Any, run_id: str) -> str:
    matches = store.run_ids_starting_with(run_id)
    if len(matches) > 1:
        _fail(f"{run_id!r} matches several runs ({', '.join(m[:12] for m in matches)}…); give more of the id")
    if not matches:
        _fail(f"no run {run_id!r}; list recent ones with `browserq runs`")
    return matches[0]


identities_app = typer.Typer(help="Named identities: one visitor each (proxy, fingerprint, storage).")
app.add_typer(identities_app, name="identities")


@identities_app.command("list")
@friendly_errors
def identities_list(pool: Annotated[str | None, typer.Option(help="Only this pool.")] = None) -> None:
    """Identities with their pool, proxy, storage and lease."""
    rows = _store().list_identities(pool=pool)
    table = Table(title=f"Identities ({len(rows)})", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("name", "pool", "region", "proxy", "storage saved", "uses", "leased to", "disabled"):
        table.add_column(column, overflow="fold")
    for i in rows:
        table.add_row(
            i.name, i.pool or "", i.region or "", i.proxy_id or "",
            i.storage_saved_at.strftime("%m-%d %H:%M") if i.storage_saved_at else "",
            str(i.uses), (i.lease_run_id or "")[:12], i.disabled_reason or "",
        )
    console.print(table)


@identities_app.command("add")
@friendly_errors
def identities_add(
    name: Annotated[str, typer.Argument(help="A name runs can ask for (identity=NAME).")],
    pool: Annotated[str | None, typer.Option(help="A pool runs can draw from (identity_pool=POOL).")] = None,
    region: Annotated[str | None, typer.Option(help="Region hint for locale/timezone, e.g. de.")] = None,
) -> None:
    """Create (or update) an identity."""
    view = _store().upsert_identity(name=name, pool=pool, region=region)
    console.print(f"identity {view.name}" + (f" in pool {view.pool}" if view.pool else ""))


@identities_app.command("disable")
@friendly_errors
def identities_disable(name: str, reason: Annotated[str, typer.Option()] = "disabled by operator") -> None:
    """Stop runs from using an identity (e.g. its account was banned)."""
    _store().disable_identity(name, reason)
    console.print(f"identity {name} disabled: {reason}")


@app.command()
@friendly_errors
def proxies() -> None:
    """Configured proxies with their shared health: successes, failures by kind, cooldown."""
    from browserq.proxies import ProxyManager

    manager = ProxyManager.from_settings(get_settings())
    if not manager.enabled:
        console.print("no proxies configured (BROWSERQ_PROXIES / BROWSERQ_PROXIES_FILE)")
        return
    table = Table(title="Proxies", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("proxy", "ok", "failed", "success", "cooling down until"):
        table.add_column(column, overflow="fold")
    for s in manager.stats():
        rate = f"{s.success_rate:.0%}" if s.success_rate is not None else "-"
        import datetime as dt

        until = (
            dt.datetime.fromtimestamp(s.cooling_down_until).strftime("%H:%M:%S") if s.cooling_down_until else ""
        )
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(s.failures.items()) if n)
        table.add_row(s.label, str(s.successes), f"{s.failures_total}" + (f" ({kinds})" if kinds else ""), rate, until)
    console.print(table)


@templates_app.command("list")
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


@templates_app.command("validate")
@friendly_errors
def templates_validate(
    paths: Annotated[list[Path] | None, typer.Argument(help="Files to check (default: the templates dir).")] = None,
) -> None:
    """Validate template files; exits 1 if any is invalid."""
    from browserq.templates.registry import validate_files

    settings = get_settings()
    files = list(paths or []) or sorted(
        p for p in settings.templates_dir.rglob("*") if p.suffix in {".yaml", ".yml"}
    )
    outcome = validate_files(
        files, max_selector_length=settings.max_selector_length, max_repeat=settings.max_repeat
    )
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


@db_app.command("upgrade")
@friendly_errors
def db_upgrade() -> None:
    """Create or upgrade the schema to the newest migration."""
    from browserq.store import Store

    settings = get_settings()
    store = Store.from_settings(settings)
    store.upgrade()
    console.print(f"database {_masked_db(settings)} at revision {store.current_revision()}")


@app.command("settings")
@friendly_errors
def show_settings() -> None:
    """Print every setting: its environment variable, current value and default."""
    settings = get_settings()
    table = Table(title="Settings", title_justify="left")
    for column in ("variable", "value", "default"):
        table.add_column(column, overflow="fold")
    for name, field in Settings.model_fields.items():
        value = getattr(settings, name)
        if name == "secret_key" and value:
            value = "(set)"
        elif name == "proxies" and value:
            from browserq.proxies import redact_proxy_setting

            value = redact_proxy_setting(value)
        default = field.default if field.default_factory is None else field.default_factory()
        table.add_row(f"BROWSERQ_{name.upper()}", str(value), str(default))
    console.print(table)


@app.command()
def keygen() -> None:
    """Print a new key for BROWSERQ_SECRET_KEY (encrypts secret params at rest)."""
    from browserq.secrets import generate_key

    print(generate_key())


def main() -> None:
    bad = _undecodable_argument(sys.argv[1:])
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


if __name__ == "__main__":
    main()
