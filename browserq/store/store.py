"""The run store: every template version, run, step attempt, artifact, batch and identity, in one
database, behind one facade, :class:`Store`, composed of one repository per concern:

    plumbing.StoreBase            engine, retried transactions, row locks, lease fencing
    ├── schema.SchemaMethods      migrate the schema (Alembic), read its revision
    ├── templates.TemplateMethods template bodies and name@version pins
    ├── runs.RunMethods           create / read / list / delete runs, heartbeat and enqueue stamps
    ├── transitions.TransitionMethods   every status change, checked and logged
    │   ├── leases.LeaseMethods         run leases, fencing tokens, checkpoints, stuck runs
    │   ├── handoffs.HandoffMethods     waits for a person, one-time live-view tokens
    │   ├── webhooks.WebhookMethods     the outbox of run events and every POST of one
    │   ├── reviews.ReviewMethods       resolve a needs_review run (a person's recorded decision)
    │   └── cancellation.CancelMethods  cancel a run (at once, or by request)
    │       └── batches.BatchMethods    batches, their counts and circuit breaker
    ├── steps.StepMethods         step attempts and artifact rows
    ├── retention.RetentionMethods  prune finished runs with every row about them
    └── identities.IdentityCatalogue    identities (catalogue)
        └── identity_leases.IdentityLeases  identities leased to one run at a time

Each method runs one short transaction of its own, so one ``Store`` can be shared by threads.
Values come back as frozen view dataclasses, never as live ORM objects (except
:meth:`Store.get_template_body`, which returns a detached ``TemplateRecord``). Errors are
:mod:`browserq.store.errors`'; each carries its policy.
"""

from __future__ import annotations

from browserq.store.batches import BatchMethods

# Re-exported: their home before the split (now browserq.store.errors).
from browserq.store.errors import (
    DuplicateRun,
    LeaseBusy,
    LeaseLost,
    RunAlreadyFinished,
    StoreUnavailable,
)
from browserq.store.handoffs import HandoffMethods
from browserq.store.identity_leases import IdentityLeases
from browserq.store.leases import LeaseMethods
from browserq.store.retention import RetentionMethods
from browserq.store.reviews import ReviewMethods
from browserq.store.runs import RunMethods
from browserq.store.schema import SchemaMethods
from browserq.store.steps import StepMethods
from browserq.store.templates import TemplateMethods
from browserq.store.webhooks import WebhookMethods


class Store(
    SchemaMethods,
    TemplateMethods,
    RunMethods,
    LeaseMethods,
    HandoffMethods,
    WebhookMethods,
    ReviewMethods,
    BatchMethods,
    StepMethods,
    IdentityLeases,
    RetentionMethods,
):
    """Persistence for runs, batches and identities. ``database_url``: any SQLAlchemy URL
    (PostgreSQL or SQLite).

    ``retry_window_s``: how long a transaction keeps being retried while the database is
    unreachable (or, on SQLite, locked) before :class:`StoreUnavailable` is raised.
    """


__all__ = [
    "DuplicateRun",
    "LeaseBusy",
    "LeaseLost",
    "RunAlreadyFinished",
    "Store",
    "StoreUnavailable",
]
