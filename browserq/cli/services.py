"""What the inspecting commands open: the run store, and how its address is shown.

The store is migrated on open when ``BROWSERQ_AUTO_MIGRATE`` says so, like a worker's, and is not
retried when the database cannot be reached (one line, at once); the database URL is always
shown masked (it may hold a password).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from browserq.cli.render import fail
from browserq.settings import Settings, get_settings

if TYPE_CHECKING:
    from browserq.store import Store
    from browserq.store.runs import Runs

#: How long a command retries a database it cannot reach: not at all. A worker rides out an
#: outage (the store's retry window); a person at a prompt is told at once, in one line, not
#: after a minute of "retrying" warnings.
CLI_RETRY_WINDOW_S = 0.0


def cli_store(settings: Settings | None = None, *, relay_webhooks: bool = False) -> Store:
    """The run store as a command uses it: a database that cannot be reached fails the command
    at once (:data:`CLI_RETRY_WINDOW_S`). ``relay_webhooks``: the events it records leave at once
    as delivery tasks (:func:`browserq.tasks.observers.client_relay`), not at the next sweep."""
    from browserq.store import Store
    from browserq.store.relay import NO_RELAY

    settings = settings or get_settings()
    relay = NO_RELAY
    if relay_webhooks:
        from browserq.tasks.observers import client_relay

        relay = client_relay(settings)
    return Store(settings.database_url, retry_window_s=CLI_RETRY_WINDOW_S, webhook_relay=relay)


def open_store(settings: Settings | None = None, *, relay_webhooks: bool = False) -> Store:
    """The run store of ``settings`` (default: the current ones), upgraded first when auto_migrate is on."""
    settings = settings or get_settings()
    store = cli_store(settings, relay_webhooks=relay_webhooks)
    if settings.auto_migrate:
        store.schema.upgrade()
    return store


def masked_db(settings: Settings) -> str:
    """The database URL with its password masked, for printing."""
    from browserq.store import mask_url

    return mask_url(settings.database_url)


def resolve_run_id(runs: Runs, run_id: str) -> str:
    """The full id of the one run ``run_id`` is a prefix of (asked of the store's ``runs``); exits 2
    naming the problem otherwise."""
    matches = runs.run_ids_starting_with(run_id)
    if len(matches) > 1:
        fail(f"{run_id!r} matches several runs ({', '.join(m[:12] for m in matches)}…); give more of the id")
    if not matches:
        fail(f"no run {run_id!r}; list recent ones with `browserq runs`")
    return matches[0]
