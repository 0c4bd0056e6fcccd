"""Operating the fleet: start workers and beat, sweep, migrate, and look at settings, proxies
and identities.

``worker`` and ``beat`` replace this process with Celery's (``os.execv``), configured for
browserq: the worker always consumes the runs' queue and the sweeper's.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from browserq.cli.render import console, fail, friendly_errors
from browserq.cli.services import cli_store, masked_db, open_store
from browserq.errors import BrowserqError
from browserq.settings import Settings, get_settings

#: Commands that hand their unknown arguments on to Celery.
PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


# --- workers ------------------------------------------------------------------------------------
def worker(
    ctx: typer.Context,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", help="Worker processes (one Chromium each).")] = 2,
    loglevel: Annotated[str, typer.Option("--loglevel", "-l")] = "INFO",
) -> None:
    """Start a Celery worker configured for browserq (prefork, one browser per process).

    Extra arguments are passed to `celery worker`. `-Q other` adds queues to browserq's own (the
    runs' queue and the sweeper's); `-X QUEUE` leaves one out, except the sweeper's.
    """
    settings = get_settings()
    try:
        argv = worker_argv(settings, concurrency, loglevel, list(ctx.args))
        if settings.artifacts_url:  # a bucket that cannot be used: refuse to start
            from browserq.store.artifacts import artifact_store

            artifact_store(settings).check()
        # (No URL: the artifacts directory is made at the first write, nothing to reach. This
        # process imports no store and no task package: Celery imports them once, after the exec.)
    except BrowserqError as exc:
        fail(str(exc))
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
    from browserq.queues import sweep_queue, webhook_queue

    asked, extra = _take_option(extra, "-Q", "--queues")
    excluded, _ = _take_option(extra, "-X", "--exclude-queues")
    sweeper = sweep_queue(settings)
    if sweeper in excluded:
        raise BrowserqError(
            f"the sweeper's queue {sweeper!r} cannot be excluded: it re-sends runs whose worker died "
            "(leave it out of -X; -X can exclude the runs' queue)"
        )
    queues = list(dict.fromkeys([settings.queue, sweeper, webhook_queue(settings), *asked]))
    return [
        sys.executable, "-m", "celery", "-A", "browserq.celery_app:app", "worker",
        "--pool", "prefork", "--concurrency", str(concurrency), "--loglevel", loglevel,
        "-Q", ",".join(queues), "-E", *extra,
    ]


@friendly_errors
def beat(ctx: typer.Context) -> None:
    """Start Celery beat with browserq's scheduler: the sweeper plus BROWSERQ_SCHEDULES_FILE.

    The schedules file is checked completely first (exit code 2, one line per problem). Start
    one on each of several hosts if you like: they share a Redis lock, only its holder fires
    and the others stand by. Extra arguments are passed to `celery beat`.
    """
    from browserq.cli.schedules import preflight

    settings = get_settings()
    count = preflight(settings)
    json_logs = settings.log_format == "json"  # every line JSON: no banner (beat logs what it loaded)
    if settings.schedules_file is not None and not json_logs:
        console.print(f"{count} schedule(s) from {settings.schedules_file} checked", style="dim", highlight=False)
    quiet = ["--quiet"] if json_logs else []
    argv = [sys.executable, "-m", "celery", "-A", "browserq.celery_app:app", *quiet, "beat", *ctx.args]
    os.execv(sys.executable, argv)


@friendly_errors
def sweep() -> None:
    """Re-enqueue stuck runs now (expired leases, lost messages); beat does this periodically.
    Needs the fleet's broker (BROWSERQ_BROKER_URL): without one, nothing is sent."""
    from browserq.submit.services import producer_services
    from browserq.tasks.sweep import sweep_stuck_runs

    settings = get_settings()
    if "broker_url" not in settings.model_fields_set:
        fail("no broker configured (BROWSERQ_BROKER_URL is not set): nothing was sent. `browserq sweep` "
             "re-sends a fleet's stuck runs to its workers; runs of `browserq run` have no queue (cancel one "
             "left running with `browserq cancel RUN_ID`)")
    count = sweep_stuck_runs(producer_services().store, settings)
    console.print(f"re-enqueued {count} run(s)")


# --- database, settings, proxies ----------------------------------------------------------------
@friendly_errors
def db_upgrade() -> None:
    """Create or upgrade the schema to the newest migration."""
    settings = get_settings()
    store = cli_store(settings)
    store.schema.upgrade()
    console.print(f"database {masked_db(settings)} at revision {store.schema.current_revision()}")


@friendly_errors
def show_settings() -> None:
    """Print every setting: its environment variable, current value and default."""
    settings = get_settings()
    table = Table(title="Settings", title_justify="left")
    for column in ("variable", "value", "default"):
        table.add_column(column, overflow="fold")
    for name, field in Settings.model_fields.items():
        value = getattr(settings, name)
        if name in ("secret_key", "webhook_secret", "mcp_token") and value:
            value = "(set)"
        elif name == "mcp_tokens" and value:  # the tokens are secrets; their tenants are not
            value = f"(set: {len(value)} tokens, tenants {', '.join(sorted(set(value.values())))})"
        elif name == "notify_url" and value:
            from browserq.webhooks.targets import shown_url

            value = shown_url(value)  # its path may be a secret (chat-service webhook URLs)
        elif name == "proxies" and value:
            from browserq.proxies import redact_proxy_setting

            value = redact_proxy_setting(value)
        default = field.get_default(call_default_factory=True)
        table.add_row(f"BROWSERQ_{name.upper()}", str(value), str(default))
    console.print(table)


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


def keygen() -> None:
    """Print a new key for BROWSERQ_SECRET_KEY (encrypts secret params at rest)."""
    from browserq.secrets import generate_key

    print(generate_key())


# --- identities ---------------------------------------------------------------------------------
@friendly_errors
def identities_list(pool: Annotated[str | None, typer.Option(help="Only this pool.")] = None) -> None:
    """Identities with their pool, proxy, storage and lease."""
    rows = open_store().identities.list_identities(pool=pool)
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


@friendly_errors
def identities_add(
    name: Annotated[str, typer.Argument(help="A name runs can ask for (identity=NAME).")],
    pool: Annotated[str | None, typer.Option(help="A pool runs can draw from (identity_pool=POOL).")] = None,
    region: Annotated[str | None, typer.Option(help="Region hint for locale/timezone, e.g. de.")] = None,
) -> None:
    """Create (or update) an identity."""
    view = open_store().identities.upsert_identity(name=name, pool=pool, region=region)
    console.print(f"identity {view.name}" + (f" in pool {view.pool}" if view.pool else ""))


@friendly_errors
def identities_disable(name: str, reason: Annotated[str, typer.Option()] = "disabled by operator") -> None:
    """Stop runs from using an identity (e.g. its account was banned)."""
    open_store().identities.disable_identity(name, reason)
    console.print(f"identity {name} disabled: {reason}")
