"""Named identities: what a site sees as one visitor, leased to one run at a time.

An identity binds a sticky proxy (``proxy_id``), a fingerprint seed (the fingerprint is generated
from it deterministically), locale/timezone/region and the browser storage (Playwright's
``storage_state`` JSON — cookies, localStorage, IndexedDB — kept *only* as a Fernet token: the
caller encrypts, the store never sees it in clear).

This module is the catalogue (create, read, list, delete, disable) and the row locking both
halves share; leasing an identity to a run is :mod:`browserq.store.identity_leases`.
"""

from __future__ import annotations

import secrets

from sqlalchemy import delete, exc, select, update
from sqlalchemy.orm import Session

from browserq.store.errors import IdentityLeaseLost, IdentityNotFound
from browserq.store.models import Identity, utcnow
from browserq.store.plumbing import Database, changed_rows
from browserq.store.views import IdentityView, to_view

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


def check_width(**values: object) -> None:
    """ValueError for a value that is not a non-empty string or is wider than its column."""
    for key, value in values.items():
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            raise ValueError(f"{key} must be a non-empty string, got {value!r}")
        if len(value) > _WIDTHS[key]:
            raise ValueError(f"{key} is longer than {_WIDTHS[key]} characters: {value[:40]!r}...")


def lock_identity(db: Database, s: Session, name: str) -> Identity | None:
    """The identity's row, locked for the rest of the transaction (None: no such identity)."""
    return s.scalars(db.locked(select(Identity).where(Identity.name == name))).one_or_none()


def fenced_identity(db: Database, s: Session, name: str, token: int, action: str) -> Identity:
    """The locked identity row, if ``token`` is still its lease token (else lease lost)."""
    row = lock_identity(db, s, name)
    if row is None or row.lease_token != token:
        raise IdentityLeaseLost(
            name,
            token,
            current_token=None if row is None else row.lease_token,
            holder_run_id=None if row is None else row.lease_run_id,
            action=action,
        )
    return row


class Identities:
    """The identity catalogue (``store.identities``); leasing one to a run is
    ``store.identity_leases``' (:mod:`browserq.store.identity_leases`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # --- catalogue ----------------------------------------------------------------------------
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
        check_width(name=name, **given)
        given = {key: value for key, value in given.items() if value is not None}
        new_seed = fingerprint_seed or secrets.token_hex(16)
        action = f"saving identity {name!r}"

        def body(s: Session, _retried: bool) -> IdentityView:
            row = lock_identity(self.db, s, name)
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
            return self.db.tx(action, body, write=True, passthrough=(exc.IntegrityError,))
        except exc.IntegrityError:
            # Another caller created the same name between our select and our insert.
            return self.db.tx(action, body, write=True)

    def get_identity(self, name: str) -> IdentityView | None:
        def read(s: Session) -> IdentityView | None:
            row = s.get(Identity, name)
            return None if row is None else to_view(IdentityView, row)

        return self.db.read(f"reading identity {name!r}", read)

    def list_identities(self, *, pool: str | None = None) -> list[IdentityView]:
        """Every identity (or those of ``pool``), by name."""
        query = select(Identity).order_by(Identity.name)
        if pool is not None:
            query = query.where(Identity.pool == pool)
        return self.db.read(
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

        self.db.tx(f"deleting identity {name!r}", body, write=True)

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
            if changed_rows(result) == 0:
                raise IdentityNotFound(f"{action}: no identity named {name!r}", name=name)

        self.db.tx(action, body, write=True)


__all__ = ["Identities", "check_width", "fenced_identity", "lock_identity"]
