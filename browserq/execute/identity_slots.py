"""A run's identity for one attempt: leased by name or from a pool, its storage decrypted, given back.

A pool run that a rotation (``ROTATE_IDENTITY``) sent back excludes the identity it rotated away
from; the name is read from the run's transitions (see :mod:`browserq.execute.decide`), so the
next attempt excludes it whichever worker runs it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import structlog

from browserq.execute.decide import excluded_identities
from browserq.runner import RunRequest
from browserq.secrets import SecretBox
from browserq.settings import Settings
from browserq.store import IdentityBusy, IdentityError, RunView, Store

log = structlog.get_logger(__name__)

#: An identity lease outlives the run's Celery hard limit by this much (then it frees itself).
IDENTITY_LEASE_EXTRA_S = 60


class IdentitySlots:
    """Leases and releases the identities runs asked for, for one process (``owner``)."""

    def __init__(
        self, store: Store, secret_box: SecretBox, settings: Settings, owner: str, *,
        leased: Callable[[str], None] | None = None,
    ) -> None:
        self.store, self.secret_box, self.settings, self.owner = store, secret_box, settings, owner
        #: Told each lease request's result: leased, busy or unavailable (the worker's metrics).
        self.leased = leased
        #: Stores before ``acquire_identity(exclude=…)`` existed pick the least recently used
        #: identity of the pool, which is another one whenever another is free.
        self.can_exclude = "exclude" in inspect.signature(store.identity_leases.acquire_identity).parameters

    def excluded(self, run: RunView, attempt: int) -> list[str]:
        """Identities this attempt must not get: the one the last rotation moved away from."""
        if not run.identity_pool or run.identity or attempt <= 1:
            return []
        return excluded_identities(t.reason or "" for t in self.store.transitions.transitions(run.id))

    def lease(self, request: RunRequest, run: RunView) -> RunRequest:
        """The request with the identity the run asked for leased to it and its storage loaded.
        Raises the store's identity errors (busy, not found, disabled): the caller decides by
        their policy."""
        if not run.identity and not run.identity_pool:
            return request
        exclude = self.excluded(run, request.run_attempt)
        extra: dict[str, Any] = {}
        if exclude and self.can_exclude:
            extra["exclude"] = exclude
        elif exclude:
            log.info("this store cannot exclude identities; taking the pool's least recently used",
                     run_id=run.id, excluded=exclude)
        try:
            identity = self.store.identity_leases.acquire_identity(
                run_id=run.id, owner=self.owner,
                ttl_s=run.timeout_s + (run.human_wait_s or 0.0) + self.settings.run_time_limit_margin_s
                + IDENTITY_LEASE_EXTRA_S,
                name=run.identity, pool=None if run.identity else run.identity_pool, **extra,
            )
        except IdentityError as exc:
            self._tell("busy" if isinstance(exc, IdentityBusy) else "unavailable")
            raise
        self._tell("leased")
        storage = None
        if identity.storage_encrypted:
            storage = self.secret_box.decrypt_json(
                identity.storage_encrypted, why=f"identity {identity.name!r} keeps its storage encrypted"
            )
        log.info("identity leased", run_id=run.id, identity=identity.name, has_storage=storage is not None,
                 excluded=exclude or None)
        return replace(request, identity=identity, identity_storage=storage)

    def release(self, request: RunRequest) -> None:
        if request.identity is not None:
            self.store.identity_leases.release_identity(request.identity.name, token=request.identity.token)

    def _tell(self, result: str) -> None:
        if self.leased is not None:
            self.leased(result)


__all__ = ["IdentitySlots"]
