"""``browserq webhooks redeliver RUN | --failed-since DURATION``: send failed events again.

A delivery gives up after ``BROWSERQ_WEBHOOK_MAX_ATTEMPTS`` POSTs (~10.6 min of a receiver's
downtime at the default 8); once the receiver is back, this queues each failed event once more as
a new delivery (its own id, the event's payload and URL, a fresh live-view link while the run
still waits), sent on the webhook queue like any new event. The failed deliveries stay as history.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from browserq.cli.render import console, fail, friendly_errors, iso
from browserq.cli.services import open_store, resolve_run_id
from browserq.errors import BrowserqError


@friendly_errors
def redeliver(
    run_id: Annotated[str | None, typer.Argument(help="The run (a unique prefix will do).")] = None,
    failed_since: Annotated[
        str | None, typer.Option("--failed-since", help="Every run's events whose last POST failed this "
                                 "recently: 30m, 12h, 2d.")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List the failed events; queue nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of the deliveries.")] = False,
) -> None:
    """Queue failed webhook events again as new deliveries (the failed ones stay as history)."""
    from browserq.execute.retention import parse_duration

    if (run_id is None) == (failed_since is None):
        fail("give a RUN or --failed-since DURATION (one of the two)")
    try:
        since = parse_duration(failed_since) if failed_since is not None else None
    except BrowserqError as exc:
        fail(str(exc))
    store = open_store(relay_webhooks=True)  # each new delivery leaves as a task on the webhook queue
    full = resolve_run_id(store.runs, run_id) if run_id is not None else None
    rows = store.webhooks.redeliver_webhooks(run_id=full, failed_since=since, dry_run=dry_run)
    if as_json:
        console.print_json(json.dumps([_row(r) for r in rows]))
        return
    verb = "would redeliver" if dry_run else "queued"
    if rows:
        table = Table(box=box.SIMPLE_HEAD)
        for column in ("delivery", "run", "event", "to", "created"):
            table.add_column(column)
        for row in map(_row, rows):
            table.add_row(str(row["delivery"]), row["run_id"][:12], row["event"], row["to"], row["created_at"])
        console.print(table)
    console.print(f"{verb} {len(rows)} event(s)" + ("" if rows else ": no failed event to send again"))


def _row(view: Any) -> dict[str, Any]:
    """One delivery as printed (the table) and as JSON (``--json``): the URL shown without secrets."""
    from browserq.webhooks.targets import shown_url

    return {"delivery": view.id, "run_id": view.run_id, "event": view.event, "event_key": view.event_key,
            "to": shown_url(view.url), "status": view.status, "created_at": iso(view.created_at)}


__all__ = ["redeliver"]
