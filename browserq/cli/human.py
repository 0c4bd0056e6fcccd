"""A person in the loop, from the command line: ``browserq live RUN_ID`` and what ``show`` prints
of a run's handoffs and webhook deliveries.

A live-view link is one-time: whoever opens it first gets the view, and the link is spent. So
``live`` (and ``show``, for a run that waits) mint a fresh link each time, valid for
``BROWSERQ_LIVE_TOKEN_TTL_S`` and never past the wait's deadline; the database keeps only its hash.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.text import Text

from browserq.cli.render import console, err_console, friendly_errors
from browserq.cli.services import open_store, resolve_run_id
from browserq.settings import get_settings

if TYPE_CHECKING:
    from browserq.store import Store

#: A run in this status has a live view (a worker serves its page to a person).
WAITING = "waiting_for_human"


def live_link(store: Store, run_id: str, purpose: str, ttl_s: float | None = None) -> str | None:
    """A fresh one-time link to the run's live view, or None when nobody is asked to look."""
    return store.handoffs.mint_live_token(run_id, purpose=purpose, ttl_s=ttl_s or get_settings().live_token_ttl_s)


@friendly_errors
def live(
    run_id: Annotated[str, typer.Argument(help="The run id, or a unique prefix of it.")],
    ttl_s: Annotated[float | None, typer.Option("--ttl", help="Seconds the link stays valid "
                                                "(default BROWSERQ_LIVE_TOKEN_TTL_S).", min=1)] = None,
) -> None:
    """Print a fresh one-time link to the live view of a run that waits for a person (or of a
    running run, view only, when the workers set BROWSERQ_LIVE_VIEW_WHILE_RUNNING)."""
    store = open_store()
    full_id = resolve_run_id(store.runs, run_id)
    run = store.runs.get_run(full_id)
    assert run is not None
    if run.status not in (WAITING, "running"):
        _refuse(f"run {full_id} is {run.status}: there is nothing to show (a live view exists while a run "
                "waits for a person, or runs with BROWSERQ_LIVE_VIEW_WHILE_RUNNING=true)")
    link = live_link(store, full_id, "cli", ttl_s)
    if link is None and run.status == "running":
        _refuse(f"run {full_id} is running and its worker does not show it: set "
                "BROWSERQ_LIVE_VIEW_WHILE_RUNNING=true on the workers to watch running runs (view only)")
    if link is None:
        _refuse(f"run {full_id} waits for a person, but its worker serves no live view (it could not listen: "
                "see its log for BROWSERQ_LIVE_VIEW_HOST/PORT)")
    print(link)  # plain, for `open "$(browserq live RUN)"`
    handoff = store.handoffs.open_handoff(full_id)
    if handoff is not None and handoff.kind == "watch":
        err_console.print("one-time link; view only, while the run runs", highlight=False)
    elif handoff is not None:
        err_console.print(f"one-time link; the wait ends {_until(handoff.deadline_at)}: {handoff.message}",
                          highlight=False)


def run_fields(run: Any, *, drop: tuple[str, ...]) -> dict[str, Any]:
    """A run's columns as ``--json`` prints them: without ``drop``, its notify URL by scheme and
    host only (a webhook URL's path or query can itself be a secret, as chat services use)."""
    from dataclasses import asdict

    from browserq.webhooks.targets import shown_url

    data = {k: v for k, v in asdict(run).items() if k not in drop}
    if data.get("notify_url"):
        data["notify_url"] = shown_url(data["notify_url"])
    return data


def human_loop_data(store: Store, run: Any) -> dict[str, Any]:
    """``show --json``'s ``handoffs`` and ``webhooks`` (URLs shown by host only, no live link)."""
    from dataclasses import asdict

    from browserq.webhooks.targets import shown_url

    hooks = [{**{k: v for k, v in asdict(d).items() if k != "payload"}, "url": shown_url(d.url)}
             for d in store.webhooks.webhook_deliveries(run.id)]
    return {"handoffs": [asdict(h) for h in store.handoffs.handoffs(run.id)], "webhooks": hooks}


def _refuse(message: str) -> NoReturn:
    err_console.print(Text.assemble(("error:", "bold red"), f" {message}"))
    raise typer.Exit(1)


def print_handoffs(store: Store, run: Any) -> None:
    """The run's waits for people (``show``), a fresh live-view link while it waits, and how
    its webhook events were delivered."""
    _print_webhooks(store, run)
    handoffs = [h for h in store.handoffs.handoffs(run.id) if h.kind != "watch"]
    if not handoffs:
        return
    console.print(Text("Handoffs", style="bold"))
    for h in handoffs:
        what = h.outcome or "waiting"
        until = f", until {h.until}" if h.until else ", until Continue"
        took = f" after {(h.ended_at - h.started_at).total_seconds():.0f} s" if h.ended_at else ""
        console.print(f"  step {h.step_path} ({h.kind}{until}): {what}{took}, {h.inputs} input(s) — {h.message}",
                      highlight=False)
    if run.status == WAITING:
        link = live_link(store, run.id, "show")
        open_one = handoffs[-1]
        console.print(Text.assemble(("Waiting for a person", "bold yellow"),
                                    f" until {_until(open_one.deadline_at)}"))
        if link:
            console.print(f"  live view (one-time link): {link}", highlight=False, soft_wrap=True)
        else:
            console.print("  its worker serves no live view", style="dim")


def _print_webhooks(store: Store, run: Any) -> None:
    from browserq.webhooks.targets import shown_url

    deliveries = store.webhooks.webhook_deliveries(run.id)
    if not deliveries:
        return
    console.print(Text("Webhooks", style="bold"))
    for d in deliveries:
        style = {"delivered": "green", "failed": "red"}.get(d.status, "yellow")
        error = f" — last error: {d.last_error}" if d.last_error and d.status != "delivered" else ""
        console.print(Text.assemble(f"  {d.event} → {shown_url(d.url)}: ", (d.status, style),
                                    f" after {d.attempts} attempt(s){error}"), highlight=False)


def _until(deadline: datetime) -> str:
    left = (deadline - datetime.now(UTC)).total_seconds()
    when = deadline.astimezone().strftime("%H:%M:%S")
    return f"at {when} (in {max(0, left) / 60:.0f} min)" if left > 0 else f"at {when} (overdue)"


__all__ = ["live", "live_link", "print_handoffs"]
