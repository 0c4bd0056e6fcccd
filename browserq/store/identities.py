"""Named identities: what a site sees as one visitor, leased to one run at a time.

An identity binds a sticky proxy (``proxy_id``), a fingerprint seed (the fingerprint is generated
from it deterministically), locale/timezone/region and the browser storage (Playwright's
``storage_state`` JSON — cookies, localStorage, IndexedDB — kept *only* as a Fernet token: the
caller encrypts, the store never sees it in clear).

Leases work like run leases (:meth:`Store.acquire_lease`): a run takes an identity for ``ttl_s``
seconds (:meth:`IdentityMethods.acquire_identity`), keeps pushing the expiry forward
(``renew_identity``) and gives it back (``release_identity``). Every grant bumps ``lease_token``;
the holder's writes (``save_identity_storage``, ``set_identity_proxy``) carry the token and are
refused with :class:`IdentityLeaseLost` once someone else was granted the identity, so a worker
presumed dead cannot overwrite its successor's cookies.

Race-free across processes: on PostgreSQL the identity row is locked (``FOR UPDATE``; a pool pick
uses ``FOR UPDATE SKIP LOCKED`` so concurrent pickers spread over the pool instead of queueing on
its least recently used row); on SQLite every write transaction starts with ``BEGIN IMMEDIATE``.

The methods are mixed into :class:`browserq.store.Store`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Select, and_, delete, exc, func, or_, select, update
from sqlalchemy.orm import Session

from browserq.errors import StoreError
from browserq.store.models import Identity, utcnow
from browserq.store.views import IdentityLease, IdentityView, to_view

T = TypeVar("T")

#: Column widths, checked up front so SQLite (which does not enforce them) behaves like PostgreSQL.
_WIDTHS = {
    "name": 100,
    "pool": 100,
    "fingerprint_seed": 64,
    "proxy_id": 64,
    "region": 20,
    "locale": 20,
    "timezone": 64,
    "run_id": 32,
    "owner": 200,
}


# --- errors ------------------------------------------------------------------------------------


class IdentityError(StoreError):
    """Base of the identity errors."""


class IdentityNotFound(IdentityError):
    """No identity with that name, or a pool with no usable identity (empty, unknown, or every
    one of its identities disabled)."""

    def __init__(self, message: str, *, name: str | None = None, pool: str | None = None) -> None:
        self.name = name
        self.pool = pool
        super().__init__(message)


class IdentityBusy(IdentityError):
    """The identity is leased to another live run; or (``name`` None) every usable identity of
    ``pool`` is. ``expires_at``: when the (earliest) blocking lease runs out, if known."""

    def __init__(
        self,
        name: str | None,
        holder_run_id: str | None,
        expires_at: datetime | None,
        *,
        pool: str | None = None,
        pool_size: int | None = None,
        leased: int | None = None,
        disabled: int = 0,
    ) -> None:
        self.name = name
        self.holder_run_id = holder_run_id
        self.expires_at = expires_at
        self.pool = pool
        self.pool_size = pool_size
        self.leased = leased
        self.disabled = disabled
        until = f" until {expires_at.isoformat()}" if expires_at else ""
        if name is not None:
            message = f"identity {name!r} is leased to run {holder_run_id}{until}"
        else:
            parts = [f"{leased} leased"] if leased is not None else []
            if disabled:
                parts.append(f"{disabled} disabled")
            detail = f" ({', '.join(parts)})" if parts else ""
            message = (
                f"pool {pool!r} has no free identity: all {pool_size} of its identities are "
                f"taken{detail}"
            )
            if expires_at is not None:
                message += f"; the first lease runs out at {expires_at.isoformat()}"
        super().__init__(message)


class IdentityDisabled(IdentityError):
    """The identity was disabled (:meth:`IdentityMethods.disable_identity`); ``reason`` says why.
    Not an :class:`IdentityBusy`: waiting does not help."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"identity {name!r} is disabled: {reason}")


class IdentityLeaseLost(IdentityError):
    """A fenced identity write with a token that is no longer the identity's: another run was
    granted it (or the lease was released, for a renewal), or the identity was deleted."""

    def __init__(
        self,
        name: str,
        token: int,
        *,
        current_token: int | None,
        holder_run_id: str | None,
        action: str | None = None,
    ) -> None:
        self.name = name
        self.token = token
        self.current_token = current_token
        self.holder_run_id = holder_run_id
        if current_token is None:
            why = "the identity no longer exists"
        elif current_token != token:
            held = f"leased to run {holder_run_id}" if holder_run_id else "not leased"
            why = f"it has moved on (token {current_token}, {held})"
        else:
            why = "the lease was released"
        prefix = action or f"identity {name!r}"
        super().__init__(f"{prefix}: the identity lease with token {token} is lost: {why}")


# --- helpers -----------------------------------------------------------------------------------


def _check_width(**values: str | None) -> None:
    for key, value in values.items():
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            raise ValueError(f"{key} must be a non-empty string, got {value!r}")
        if len(value) > _WIDTHS[key]:
            raise ValueError(f"{key} is longer than {_WIDTHS[key]} characters: {value[:40]!r}...")


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


class IdentityMethods:
    """The identity half of :class:`browserq.store.Store` (a mixin: it uses the Store's
    transaction plumbing)."""

    if TYPE_CHECKING:
        _pg: bool

        def _tx(
            self,
            action: str,
            body: Callable[[Session, bool], T],
            *,
            write: bool,
            passthrough: tuple[type[BaseException], ...] = (),
        ) -> T: ...

        def _read(self, action: str, body: Callable[[Session], T]) -> T: ...

        def _locked(self, query: Select[Any]) -> Select[Any]: ...

    # --- plumbing ---------------------------------------------------------------------------
    def _lock_identity(self, s: Session, name: str) -> Identity | None:
        return s.scalars(self._locked(select(Identity).where(Identity.name == name))).one_or_none()

    def _fenced_identity(self, s: Session, name: str, token: int, action: str) -> Identity:
        """The locked identity row, if ``token`` is still its lease token (else lease lost)."""
        row = self._lock_identity(s, name)
        if row is None or row.lease_token != token:
            raise IdentityLeaseLost(
                name,
                token,
                current_token=None if row is None else row.lease_token,
                holder_run_id=None if row is None else row.lease_run_id,
                action=action,
            )
        return row

    # --- catalogue --------------------------------------------------------------------------
    def upsert_identity(
        self,
        *,
        name: str,
        pool: str | None = None,
        fingerprint_seed: str | None = None,
        proxy_id: str | None = None,
        region: str | None = None,
        locale: str | None = None,
        timezone: str | None = None,
    ) -> IdentityView:
        """Create the identity (with a random 32-hex fingerprint seed unless one is given), or
        update the given (non-None) fields of the existing one; a lease on it is untouched."""
        given = {
            "pool": pool,
            "fingerprint_seed": fingerprint_seed,
            "proxy_id": proxy_id,
            "region": region,
            "locale": locale,
            "timezone": timezone,
        }
        _check_width(name=name, **given)
        given = {key: value for key, value in given.items() if value is not None}
        new_seed = fingerprint_seed or secrets.token_hex(16)
        action = f"saving identity {name!r}"

        def body(s: Session, _retried: bool) -> IdentityView:
            row = self._lock_identity(s, name)
            if row is None:
                row = Identity(
                    name=name,
                    lease_token=0,
                    uses=0,
                    created_at=utcnow(),
                    **{**given, "fingerprint_seed": new_seed},
                )
                s.add(row)
            else:
                for key, value in given.items():
                    setattr(row, key, value)
            s.flush()
            return to_view(IdentityView, row)

        try:
            return self._tx(action, body, write=True, passthrough=(exc.IntegrityError,))
        except exc.IntegrityError:
            # Another caller created the same name between our select and our insert.
            return self._tx(action, body, write=True)

    def get_identity(self, name: str) -> IdentityView | None:
        def read(s: Session) -> IdentityView | None:
            row = s.get(Identity, name)
            return None if row is None else to_view(IdentityView, row)

        return self._read(f"reading identity {name!r}", read)

    def list_identities(self, *, pool: str | None = None) -> list[IdentityView]:
        """Every identity (or those of ``pool``), by name."""
        query = select(Identity).order_by(Identity.name)
        if pool is not None:
            query = query.where(Identity.pool == pool)
        return self._read(
            "listing identities",
            lambda s: [to_view(IdentityView, row) for row in s.scalars(query)],
        )

    def delete_identity(self, name: str) -> None:
        """Delete the identity (a no-op if absent). Its holder's next fenced write, renewal or
        release finds it gone (:class:`IdentityLeaseLost`; release stays silent)."""

        def body(s: Session, _retried: bool) -> None:
            s.execute(
                delete(Identity)
                .where(Identity.name == name)
                .execution_options(synchronize_session=False)
            )

        self._tx(f"deleting identity {name!r}", body, write=True)

    def disable_identity(self, name: str, reason: str) -> None:
        """Never lease the identity again (until :meth:`enable_identity`); a current lease runs
        on. Unknown name: :class:`IdentityNotFound`."""
        if not reason:
            raise ValueError("disable_identity needs a reason")
        self._set_disabled(name, reason, f"disabling identity {name!r}")

    def enable_identity(self, name: str) -> None:
        """Undo :meth:`disable_identity`."""
        self._set_disabled(name, None, f"enabling identity {name!r}")

    def _set_disabled(self, name: str, reason: str | None, action: str) -> None:
        def body(s: Session, _retried: bool) -> None:
            result = s.execute(
                update(Identity)
                .where(Identity.name == name)
                .values(disabled_reason=reason)
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 0:
                raise IdentityNotFound(f"{action}: no identity named {name!r}", name=name)

        self._tx(action, body, write=True)

    # --- leases -----------------------------------------------------------------------------
    def acquire_identity(
        self,
        *,
        run_id: str,
        owner: str,
        ttl_s: float,
        name: str | None = None,
        pool: str | None = None,
    ) -> IdentityLease:
        """Lease an identity to ``run_id`` for ``ttl_s`` seconds; race-free across processes.

        ``name``: that identity. Unknown → :class:`IdentityNotFound`; disabled →
        :class:`IdentityDisabled`; leased to another run whose lease has not expired →
        :class:`IdentityBusy`. Free, expired, or already leased to ``run_id`` (a re-acquire
        keeps it) → leased.

        ``pool``: the identity of the pool that ``run_id`` already holds, else the free one used
        least recently (never used first). None free → :class:`IdentityBusy` (naming the pool and
        its size); no identity in the pool, or all disabled → :class:`IdentityNotFound`.

        Every grant bumps the token (fencing out any earlier holder, the same run's previous
        attempt included) and sets ``last_used_at``; ``uses`` counts grants to a run that did
        not already hold the identity.
        """
        if (name is None) == (pool is None):
            raise ValueError("acquire_identity takes exactly one of name= and pool=")
        _check_width(run_id=run_id, owner=owner, name=name, pool=pool)
        _check_ttl(ttl_s)
        ttl = timedelta(seconds=ttl_s)

        def grant(s: Session, row: Identity, now: datetime) -> IdentityLease:
            if row.lease_run_id != run_id:
                row.uses += 1
            row.lease_token += 1
            row.lease_run_id = run_id
            row.lease_owner = owner
            row.lease_expires_at = now + ttl
            row.last_used_at = now
            s.flush()
            return _lease_of(row)

        if name is not None:
            action = f"acquiring identity {name!r} for run {run_id}"

            def by_name(s: Session, _retried: bool) -> IdentityLease:
                row = self._lock_identity(s, name)
                if row is None:
                    raise IdentityNotFound(f"{action}: no identity named {name!r}", name=name)
                if row.disabled_reason is not None:
                    raise IdentityDisabled(name, row.disabled_reason)
                now = utcnow()
                if _live(row, now) and row.lease_run_id != run_id:
                    raise IdentityBusy(name, row.lease_run_id, row.lease_expires_at)
                return grant(s, row, now)

            return self._tx(action, by_name, write=True)

        assert pool is not None
        action = f"acquiring an identity of pool {pool!r} for run {run_id}"

        def from_pool(s: Session, _retried: bool) -> IdentityLease:
            now = utcnow()
            usable = and_(Identity.pool == pool, Identity.disabled_reason.is_(None))
            # 1. The run already holds one of the pool's identities (a retry): keep it.
            mine = select(Identity).where(usable, Identity.lease_run_id == run_id)
            row = s.scalars(self._locked(mine.order_by(Identity.name).limit(1))).first()
            if row is None:
                # 2. The free identity used least recently.
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
                if self._pg:
                    row = s.scalars(free.with_for_update(skip_locked=True)).first()
                    if row is None:
                        # Every free-looking row was locked by someone: wait for them and take
                        # whatever they left free (PostgreSQL re-checks the WHERE after the wait),
                        # rather than call the pool busy because of a brief lock.
                        row = s.scalars(free.with_for_update()).first()
                else:
                    row = s.scalars(free).first()
            if row is None:
                raise self._pool_exhausted(s, pool, now, action)
            return grant(s, row, now)

        return self._tx(action, from_pool, write=True)

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
        )

    def renew_identity(self, name: str, *, token: int, ttl_s: float) -> None:
        """Push the lease's expiry to now + ``ttl_s``. :class:`IdentityLeaseLost` when the token
        is not the identity's any more, the lease was released or the identity deleted."""
        _check_ttl(ttl_s)
        action = f"renewing the lease on identity {name!r}"

        def body(s: Session, _retried: bool) -> None:
            row = self._fenced_identity(s, name, token, action)
            if row.lease_run_id is None:
                raise IdentityLeaseLost(
                    name, token, current_token=row.lease_token, holder_run_id=None, action=action
                )
            row.lease_expires_at = utcnow() + timedelta(seconds=ttl_s)

        self._tx(action, body, write=True)

    def release_identity(self, name: str, *, token: int) -> None:
        """Give the lease up if ``token`` is still the identity's (otherwise, or if the identity
        is gone, do nothing). The token stays, so the holder's late fenced writes still pass
        until the identity is granted again."""

        def body(s: Session, _retried: bool) -> None:
            row = self._lock_identity(s, name)
            if row is None or row.lease_token != token:
                return
            row.lease_run_id = None
            row.lease_owner = None
            row.lease_expires_at = None

        self._tx(f"releasing identity {name!r}", body, write=True)

    def save_identity_storage(self, name: str, *, token: int, storage_encrypted: str) -> None:
        """Store the identity's browser storage (a Fernet token of the storage_state JSON, never
        clear text), fenced by the lease token; sets ``storage_saved_at``."""
        if not isinstance(storage_encrypted, str) or not storage_encrypted:
            raise ValueError("storage_encrypted must be a non-empty string (a Fernet token)")
        if storage_encrypted.lstrip()[:1] in ("{", "["):
            raise ValueError(
                "storage_encrypted looks like clear JSON: encrypt the storage state first"
            )
        action = f"saving the storage of identity {name!r}"

        def body(s: Session, _retried: bool) -> None:
            row = self._fenced_identity(s, name, token, action)
            row.storage_encrypted = storage_encrypted
            row.storage_saved_at = utcnow()

        self._tx(action, body, write=True)

    def set_identity_proxy(self, name: str, *, token: int, proxy_id: str | None) -> None:
        """Give the identity another sticky proxy (its old one failed), fenced by the token."""
        _check_width(proxy_id=proxy_id)
        action = f"setting the proxy of identity {name!r}"

        def body(s: Session, _retried: bool) -> None:
            row = self._fenced_identity(s, name, token, action)
            row.proxy_id = proxy_id

        self._tx(action, body, write=True)


__all__ = [
    "IdentityBusy",
    "IdentityDisabled",
    "IdentityError",
    "IdentityLeaseLost",
    "IdentityMethods",
    "IdentityNotFound",
]
