"""Small builders shared by the store tests."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import MetaData, func, select, text, update

from browserq.store import Lease, Run, RunStatus, Store
from browserq.store.models import utcnow

HASH_A = "a" * 64


def template(
    store: Store, name: str = "login", version: str = "1", content_hash: str = HASH_A
) -> int:
    return store.templates.save_template(
        name=name,
        version=version,
        content_hash=content_hash,
        body=f"name: {name}\n",
        source="t.yaml",
    )


def new_run(store: Store, template_id: int | None = None, **kwargs: Any) -> str:
    run_id = kwargs.pop("run_id", uuid.uuid4().hex)
    store.runs.create_run(
        run_id=run_id,
        template_id=template_id if template_id is not None else template(store),
        template_name=kwargs.pop("name", "login"),
        template_version="1",
        params=kwargs.pop("params", {"user": "ann"}),
        timeout_s=30.0,
        **kwargs,
    )
    return run_id


def step(
    store: Store, run_id: str, path: str = "0", *, run_attempt: int = 1, attempt: int = 1, **kw: Any
) -> int:
    return store.steps.start_step(
        run_id=run_id,
        run_attempt=run_attempt,
        step_path=path,
        step_id=f"s{path}",
        attempt=attempt,
        action="click",
        inputs={"selector": "#go"},
        url_before="https://example.test/a",
        **kw,
    )


def count(store: Store, table: str, where: str = "1=1", **params: Any) -> int:
    with store.engine.connect() as conn:
        return conn.execute(
            select(func.count()).select_from(text(table)).where(text(where)), params
        ).scalar_one()


def expire_lease(store: Store, run_id: str, seconds_ago: float = 1.0) -> None:
    """Make the run's lease look expired (without waiting for it)."""
    with store.engine.begin() as conn:
        conn.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(lease_expires_at=utcnow() - timedelta(seconds=seconds_ago))
        )


def age(store: Store, run_id: str, **columns_seconds_ago: float) -> None:
    """Move timestamp columns of a run into the past."""
    now = utcnow()
    values = {name: now - timedelta(seconds=s) for name, s in columns_seconds_ago.items()}
    with store.engine.begin() as conn:
        conn.execute(update(Run).where(Run.id == run_id).values(**values))


def run_in(store: Store, status: RunStatus | str, **kwargs: Any) -> tuple[str, Lease | None]:
    """A run brought to ``status`` through legal transitions (with its lease, if it has one)."""
    status = RunStatus(status)
    run_id = new_run(store, **kwargs)
    if status is RunStatus.QUEUED:
        return run_id, None
    lease = store.leases.acquire_lease(run_id, owner="w1", ttl_s=60)
    if status is RunStatus.RUNNING:
        return run_id, lease
    store.transitions.transition(run_id, status, reason=f"to {status.value}", token=lease.token)
    return run_id, lease


def schema_diff(store: Store, metadata: MetaData) -> list:
    """How the database's schema differs from ``metadata`` (Alembic's autogenerate diff)."""
    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(context, metadata)
