"""Identity leases: an identity (by name, or the least recently used free one of a pool) leased
to one run at a time, fenced like run leases.

A run takes an identity for ``ttl_s`` seconds (:meth:`IdentityLeases.acquire_identity`), keeps
pushing the expiry forward (``renew_identity``) and gives it back (``release_identity``). Every
grant bumps ``lease_token``; the holder's writes (``save_identity_storage``,
``set_identity_proxy``) carry the token and are refused with :class:`IdentityLeaseLost` once
someone else was granted the identity, so a worker presumed dead cannot overwrite its successor's
cookies.

Race-free across processes: on PostgreSQL the identity row is locked (``FOR UPDATE``; a pool pick
uses ``FOR UPDATE SKIP LOCKED`` so concurrent pickers spread over the pool instead of queueing on
its least recently used row); on SQLite every write transaction starts with ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from browserq.store.clock import db_now
from browserq.store.errors import (
    IdentityBusy,
    IdentityDisabled,
    IdentityError,
    IdentityLeaseLost,
    IdentityNotFound,
)
from browserq.store.identities import check_width, fenced_identity, lock_identity
from browserq.store.models import Identity, utcnow
from browserq.store.plumbing import Database
from browserq.store.views import IdentityLease


def _check_ttl(ttl_s: float) -> None:
    if not ttl_s > 0:
        raise ValueError(f"ttl_s must be positive, got {ttl_s}")


def _live(row: Identity, now: datetime) -> bool:
    return (
        row.lease_run_id is not None
        and row.lease_expires_at is not None
        and row.lease_expires_at > now
    )


def _lease_of(row: Identity) -> IdentityLease:
    assert row.lease_expires_at is not None
    return IdentityLease(
        name=row.name,
        token=row.lease_token,
        expires_at=row.lease_expires_at,
        fingerprint_seed=row.fingerprint_seed,
        proxy_id=row.proxy_id,
        region=row.region,
        locale=row.locale,
        timezone=row.timezone,
        storage_encrypted=row.storage_encrypted,
        pool=row.pool,
    )


def _check_sealed(storage_encrypted: object) -> None:
    """ValueError unless ``storage_encrypted`` is a non-empty string that is not clear JSON
    (callers outside the typed code may pass anything)."""
    if not isinstance(storage_encrypted, str) or not storage_encrypted:
        raise ValueError("storage_encrypted must be a non-empty string (a Fernet token)")
    if storage_encrypted.lstrip()[:1] in ("{", "["):
        raise ValueError(
            "storage_encrypted looks like clear JSON: encrypt the storage state first"
        )


@dataclass(frozen=True, slots=True)
class _Grant:
    """Who asks for an identity, and for how long."""

    run_id: str
    owner: str
    ttl: timedelta

    def apply(self, s: Session, row: Identity, now: datetime) -> IdentityLease:
        """Lease the locked ``row``: a new token (fencing out any earlier holder, the same run's
        previous attempt included); ``uses`` counts grants to a run that did not hold it."""
        if row.lease_run_id != self.run_id:
            row.uses += 1
        row.lease_token += 1
        row.lease_run_id = self.run_id
        row.lease_owner = self.owner
        row.lease_expires_at = now + self.ttl
        row.last_used_at = now
        s.flush()
        return _lease_of(row)


class IdentityLeases:
    """Identities leased to one run at a time (``store.identity_leases``; the catalogue is
    ``store.identities``)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def acquire_identity(
        self,
        *,
        run_id: str,
        owner: str,
        ttl_s: float,
        name: str | None = None,
        pool: str | None = None,
        exclude: Collection[str] = (),
    ) -> IdentityLease:
        """Lease an identity to ``run_id`` for ``ttl_s`` seconds; race-free across processes.

        ``name``: that identity. Unknown → :class:`IdentityNotFound`; disabled →
        :class:`IdentityDisabled`; leased to another run whose lease has not expired →
        :class:`IdentityBusy`. Free, expired, or already leased to ``run_id`` (a re-acquire
        keeps it) → leased.

        ``pool``: the identity of the pool that ``run_id`` already holds, else the free one used
        least recently (never used first). None free → :class:`IdentityBusy` (naming the pool and
        its size); no identity in the pool, or all disabled → :class:`IdentityNotFound`.

        ``exclude``: names of pool identities not to lease this time (the execution layer
        rotates away from an identity a site blocked); when every free identity of the pool is
        excluded, an excluded one is leased rather than none. The run's lease on an excluded
        identity it still holds is left for the caller to release. Ignored with ``name``.

        Every grant bumps the token (fencing out any earlier holder, the same run's previous
        attempt included) and sets ``last_used_at``; ``uses`` counts grants to a run that did
        not already hold the identity.
        """
        if (name is None) == (pool is None):
            raise ValueError("acquire_identity takes exactly one of name= and pool=")
        if isinstance(exclude, str):
            raise TypeError("exclude takes a collection of identity names, not one string")
        check_width(run_id=run_id, owner=owner, name=name, pool=pool)
        _check_ttl(ttl_s)
        grant = _Grant(run_id, owner, timedelta(seconds=ttl_s))
        if name is not None:
            action = f"acquiring identity {name!r} for run {run_id}"
            return self.db.tx(
                action, lambda s, _retried: self._acquire_named(s, name, grant, action), write=True
            )
        assert pool is not None
        action = f"acquiring an identity of pool {pool!r} for run {run_id}"
        avoid = frozenset(exclude)
        return self.db.tx(
            action,
            lambda s, _retried: self._acquire_from_pool(s, pool, grant, avoid, action),
            write=True,
        )

    def _acquire_named(self, s: Session, name: str, grant: _Grant, action: str) -> IdentityLease:
        row = lock_identity(self.db, s, name)
        if row is None:
            raise IdentityNotFound(f"{action}: no identity named {name!r}", name=name)
        if row.disabled_reason is not None:
            raise IdentityDisabled(name, row.disabled_reason)
        now = db_now(s)
        if _live(row, now) and row.lease_run_id != grant.run_id:
            raise IdentityBusy(name, row.lease_run_id, row.lease_expires_at, now=now)
        return grant.apply(s, row, now)

    def _acquire_from_pool(
        self, s: Session, pool: str, grant: _Grant, avoid: frozenset[str], action: str
    ) -> IdentityLease:
        now = db_now(s)
        row = self._pick_from_pool(s, pool, grant.run_id, now, avoid)
        if row is None and avoid:
            # Every free identity of the pool is excluded: an excluded one beats none.
            row = self._pick_from_pool(s, pool, grant.run_id, now, frozenset())
        if row is None:
            raise self._pool_exhausted(s, pool, now, action)
        return grant.apply(s, row, now)

    def _pick_from_pool(
        self, s: Session, pool: str, run_id: str, now: datetime, avoid: frozenset[str]
    ) -> Identity | None:
        """The locked row to lease: the one of the pool ``run_id`` already holds (a retry keeps
        it), else the free one used least recently; never one named in ``avoid``."""
        usable = and_(Identity.pool == pool, Identity.disabled_reason.is_(None))
        if avoid:
            usable = and_(usable, Identity.name.not_in(sorted(avoid)))
        mine = select(Identity).where(usable, Identity.lease_run_id == run_id)
        row = s.scalars(self.db.locked(mine.order_by(Identity.name).limit(1))).first()
        if row is not None:
            return row
        free = (
            select(Identity)
            .where(
                usable,
                or_(
                    Identity.lease_run_id.is_(None),
                    Identity.lease_expires_at.is_(None),
                    Identity.lease_expires_at <= now,
                ),
            )
            .order_by(Identity.last_used_at.asc().nulls_first(), Identity.name)
            .limit(1)
        )
        if not self.db.pg:
            return s.scalars(free).first()
        row = s.scalars(free.with_for_update(skip_locked=True)).first()
        if row is None:
            # Every free-looking row was locked by someone: wait for them and take whatever they
            # left free (PostgreSQL re-checks the WHERE after the wait), rather than call the
            # pool busy because of a brief lock.
            row = s.scalars(free.with_for_update()).first()
        return row

    def _pool_exhausted(self, s: Session, pool: str, now: datetime, action: str) -> IdentityError:
        total, disabled = s.execute(
            select(func.count(), func.count(Identity.disabled_reason)).where(Identity.pool == pool)
        ).one()
        if total == 0:
            return IdentityNotFound(f"{action}: the pool has no identities", pool=pool)
        if disabled == total:
            return IdentityNotFound(
                f"{action}: the pool has no usable identity (all {total} are disabled)", pool=pool
            )
        leased, first_expiry = s.execute(
            select(func.count(), func.min(Identity.lease_expires_at)).where(
                Identity.pool == pool,
                Identity.disabled_reason.is_(None),
                Identity.lease_run_id.is_not(None),
                Identity.lease_expires_at > now,
            )
        ).one()
        return IdentityBusy(
            None,
            None,
            first_expiry,
            pool=pool,
            pool_size=int(total),
            leased=int(leased),
            disabled=int(disabled),
            now=now,
        )

    def renew_identity(self, name: str, *, token: int, ttl_s: float) -> None:
        """Push the lease's expiry to now + ``ttl_s``. :class:`IdentityLeaseLost` when the token
        is not the identity's any more, the lease was released or the identity deleted."""
        _check_ttl(ttl_s)
        action = f"renewing the lease on identity {name!r}"

        def body(s: Session, _retried: bool) -> None:
            row = fenced_identity(self.db, s, name, token, action)
            if row.lease_run_id is None:
                raise IdentityLeaseLost(
                    name, token, current_token=row.lease_token, holder_run_id=None, action=action
                )
            row.lease_expires_at = db_now(s) + timedelta(seconds=ttl_s)

        self.db.tx(action, body, write=True)

    def release_identity(self, name: str, *, token: int) -> None:
        """Give the lease up if ``token`` is still the identity's (otherwise, or if the identity
        is gone, do nothing). The token stays, so the holder's late fenced writes still pass
        until the identity is granted again."""

        def body(s: Session, _retried: bool) -> None:
            row = lock_identity(self.db, s, name)
            if row is None or row.lease_token != token:
                return
            row.lease_run_id = None
            row.lease_owner = None
            row.lease_expires_at = None

        self.db.tx(f"releasing identity {name!r}", body, write=True)

    def save_identity_storage(self, name: str, *, token: int, storage_encrypted: str) -> None:
        """Store the identity's browser storage (a Fernet token of the storage_state JSON, never
        clear text), fenced by the lease token; sets ``storage_saved_at``."""
        _check_sealed(storage_encrypted)
        action = f"saving the storage of identity {name!r}"

        def body(s: Session, _retried: bool) -> None:
            row = fenced_identity(self.db, s, name, token, action)
            row.storage_encrypted = storage_encrypted
            row.storage_saved_at = utcnow()

        self.db.tx(action, body, write=True)

    def set_identity_proxy(self, name: str, *, token: int, proxy_id: str | None) -> None:
        """Give the identity another sticky proxy (its old one failed), fenced by the token."""
        check_width(proxy_id=proxy_id)
        action = f"setting the proxy of identity {name!r}"

        def body(s: Session, _retried: bool) -> None:
            row = fenced_identity(self.db, s, name, token, action)
            row.proxy_id = proxy_id

        self.db.tx(action, body, write=True)


__all__ = ["IdentityLeases"]
