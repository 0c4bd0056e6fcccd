"""The run store: every template version, run, step attempt, artifact, batch and identity, in one
database, behind one object, :class:`Store`, that holds one repository per concern:

    store.database         plumbing.Database: engine, retried transactions, row locks, fencing,
                           the database's clock (handed to every repository below)
    store.schema           schema.Schema: migrate the schema (Alembic), read its revision
    store.templates        templates.Templates: template bodies and name@version pins
    store.runs             runs.Runs: create / read / list / delete runs, heartbeat, enqueue stamps
    store.steps            steps.Steps: step attempts and artifact rows
    store.transitions      transitions.Transitions: every status change, checked and logged
                           (given steps: a run's end writes its last steps in its transaction)
    store.leases           leases.Leases: run leases, fencing tokens, checkpoints, stuck runs
    store.handoffs         handoffs.Handoffs: waits for a person, one-time live-view tokens
    store.webhooks         webhooks.Webhooks: the outbox of run events and every POST of one
    store.reviews          reviews.Reviews: resolve a needs_review run (a person's decision)
    store.cancellation     cancellation.Cancellation: cancel a run (at once, or by request)
    store.batches          batches.Batches: batches, their counts and circuit breaker
    store.identities       identities.Identities: the identity catalogue
    store.identity_leases  identity_leases.IdentityLeases: identities leased to one run at a time
    store.retention        retention.Retention: prune finished runs with every row about them

Each repository is handed what it needs in its constructor (the database, and the transitions a
status change goes through); none inherits another. Each method runs one short transaction of its
own, so one ``Store`` can be shared by threads. Values come back as frozen view dataclasses, never
as live ORM objects (except :meth:`Templates.get_template_body`, which returns a detached
``TemplateRecord``). Errors are :mod:`browserq.store.errors`'; each carries its policy.

The methods lived on ``Store`` itself before (``store.get_run``): that spelling raises an
AttributeError naming the new one (``store.runs.get_run``).
"""

from __future__ import annotations

import typing
from functools import cache
from typing import TYPE_CHECKING, NoReturn, Self

from sqlalchemy import Engine

from browserq.store.batches import Batches
from browserq.store.cancellation import Cancellation
from browserq.store.engine import DbTimeouts

# Re-exported: their home before the split (now browserq.store.errors).
from browserq.store.errors import (
    DuplicateRun,
    LeaseBusy,
    LeaseLost,
    RunAlreadyFinished,
    StoreUnavailable,
)
from browserq.store.handoffs import Handoffs
from browserq.store.identities import Identities
from browserq.store.identity_leases import IdentityLeases
from browserq.store.leases import Leases
from browserq.store.plumbing import DEFAULT_RETRY_WINDOW_S, Database, public_names
from browserq.store.relay import NO_RELAY, WebhookRelay
from browserq.store.retention import Retention
from browserq.store.reviews import Reviews
from browserq.store.runs import Runs
from browserq.store.schema import Schema
from browserq.store.steps import Steps
from browserq.store.templates import Templates
from browserq.store.transitions import Transitions
from browserq.store.webhooks import Webhooks

if TYPE_CHECKING:
    from browserq.settings import Settings

class Store:
    """Persistence for runs, batches and identities: one repository per concern (see the module
    docstring). ``database_url``: any SQLAlchemy URL (PostgreSQL or SQLite).

    ``retry_window_s``: how long a transaction keeps being retried while the database is
    unreachable (or, on SQLite, locked) before :class:`StoreUnavailable` is raised.
    ``timeouts``: PostgreSQL's statement, lock and idle-in-transaction limits.
    ``webhook_relay``: where run events go and who sends them once committed
    (:class:`~browserq.store.relay.WebhookRelay`; default: nobody, the sweep sends them).
    """

    # The repositories, one per concern: the map of old spellings (store.get_run) is read from
    # these annotations, so it cannot drift from what the store holds.
    schema: Schema
    templates: Templates
    runs: Runs
    steps: Steps
    transitions: Transitions
    leases: Leases
    handoffs: Handoffs
    webhooks: Webhooks
    reviews: Reviews
    cancellation: Cancellation
    batches: Batches
    identities: Identities
    identity_leases: IdentityLeases
    retention: Retention

    def __init__(
        self,
        database_url: str,
        *,
        echo: bool = False,
        retry_window_s: float = DEFAULT_RETRY_WINDOW_S,
        timeouts: DbTimeouts | None = None,
        webhook_relay: WebhookRelay = NO_RELAY,
    ) -> None:
        self._relay = webhook_relay
        announce = self._announce if webhook_relay.send is not None else None
        self.database = db = Database(
            database_url, echo=echo, retry_window_s=retry_window_s, timeouts=timeouts, announce=announce
        )
        self.schema = Schema(db)
        self.templates = Templates(db)
        self.runs = Runs(db)
        self.steps = Steps(db)
        self.transitions = Transitions(db, self.steps, fleet_notify_url=webhook_relay.fleet_notify_url)
        self.leases = Leases(db, self.transitions)
        self.handoffs = Handoffs(db, self.transitions)
        self.webhooks = Webhooks(db)
        self.reviews = Reviews(self.transitions)
        self.cancellation = Cancellation(db, self.transitions)
        self.batches = Batches(db, self.cancellation)
        self.identities = Identities(db)
        self.identity_leases = IdentityLeases(db)
        self.retention = Retention(db)

    @classmethod
    def from_settings(cls, settings: Settings, *, webhook_relay: WebhookRelay = NO_RELAY) -> Self:
        window = getattr(settings, "database_retry_window_s", None)
        return cls(
            settings.database_url,
            retry_window_s=DEFAULT_RETRY_WINDOW_S if window is None else float(window),
            timeouts=DbTimeouts.from_settings(settings),
            webhook_relay=webhook_relay,
        )

    def __repr__(self) -> str:
        return f"Store({self.masked_url!r})"

    @property
    def masked_url(self) -> str:
        return self.database.masked_url

    @property
    def dialect(self) -> str:
        """``"postgresql"`` or ``"sqlite"``."""
        return self.database.dialect

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (tools and tests that read the tables directly)."""
        return self.database.engine

    def dispose(self) -> None:
        """Close every pooled connection (call before forking, and at shutdown)."""
        self.database.dispose()

    def _announce(self, ids: list[int]) -> None:
        """After a commit: hand the new webhook deliveries to the relay, with this store."""
        send = self._relay.send
        if send is not None:
            send(self, ids)

    if not TYPE_CHECKING:  # mypy must still flag the old spelling: it sees no __getattr__

        def __getattr__(self, name: str) -> NoReturn:
            home = moved_methods().get(name)
            if home is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            raise AttributeError(f"Store.{name} moved: use store.{home}.{name}")


@cache
def moved_methods() -> dict[str, str]:
    """Each repository method's name → the store attribute that holds it (``get_run`` → ``runs``),
    read from :class:`Store`'s annotated repositories."""
    return {
        method: attribute
        for attribute, repository in typing.get_type_hints(Store).items()
        for method in public_names(repository)
    }


__all__ = [
    "DuplicateRun",
    "LeaseBusy",
    "LeaseLost",
    "RunAlreadyFinished",
    "Store",
    "StoreUnavailable",
    "moved_methods",
]
