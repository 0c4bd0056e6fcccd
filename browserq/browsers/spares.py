"""Pre-warmed spare contexts: which ones to prepare, and which run may take which.

A spare is a context made ahead of time, its page open, so that a run does not wait for
``new_context`` + ``new_page``. A context cannot change its proxy (or its fingerprint) once made,
so every spare is filed under the *key* of the options it was made with, and a run takes a spare
only when its own options have exactly that key: the same proxy (server and credentials), the same
region, no storage to restore and no named identity. A run with other options gets a context of
its own; a spare is never handed to a second run.

What to prepare is the pool's :class:`SparePlan`'s call. Without one, spares are plain contexts for
runs that ask for nothing special. With proxies, the plan chooses the proxy of a coming run when
it prepares its spare (see :class:`browserq.proxies.ProxySpares`), and says which prepared proxies
are still expected (a proxy that cooled down is not): spares nobody will ask for are closed.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from playwright.async_api import BrowserContext

from browserq.browsers.instance import Instance
from browserq.browsers.meter import PoolMeter

__all__ = ["PlainSpares", "Spare", "SparePlan", "Spares", "asked_for", "normalized_options", "open_page", "pending_keys",
           "spare_key", "wait_for_spare"]


class SparePlan(Protocol):
    """Which spares a pool prepares (one plan per pool, called on the pool's loop)."""

    async def next_options(self) -> dict[str, Any] | None:
        """``new_context`` keyword arguments of the next spare to prepare; None: none now."""
        ...

    def pending(self) -> list[dict[str, Any]] | None:
        """Options of the spares still expected, one entry per spare (None: every spare is)."""
        ...


class PlainSpares:
    """Spares for runs that ask for nothing special (no proxy, storage or identity)."""

    async def next_options(self) -> dict[str, Any] | None:
        return {}

    def pending(self) -> list[dict[str, Any]] | None:
        return None


def normalized_options(identity_seed: str | None, region: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """``new_context``'s arguments as the pool keeps them (identity and region under ``_identity``)."""
    if identity_seed or region:
        return {**options, "_identity": (identity_seed, region)}
    return dict(options)


def spare_key(options: dict[str, Any]) -> str | None:
    """The key of a context made with ``options`` (normalized), or None when a run asking for them
    must get a context of its own: storage to restore, a named identity, any other option."""
    seed, region = options.get("_identity", (None, None))
    rest = {k: v for k, v in options.items() if k != "_identity"}
    if seed or set(rest) - {"proxy"}:
        return None
    return json.dumps({"proxy": rest.get("proxy"), "region": region}, sort_keys=True)


def asked_for(asked: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A plan's ``new_context`` arguments, normalized, and their key (a plan must ask for a spare
    some run can take)."""
    rest = dict(asked)
    options = normalized_options(rest.pop("identity_seed", None), rest.pop("region", None), rest)
    key = spare_key(options)
    if key is None:
        raise ValueError("a spare plan asked for options with which no run takes a spare")
    return options, key


#: How long a run waits for a spare that is being made before it makes a context of its own.
SPARE_WAIT_S = 5.0


async def wait_for_spare(refill: asyncio.Task[None] | None, plan: SparePlan, key: str,
                         timeout_s: float = SPARE_WAIT_S) -> None:
    """Wait for a ``refill`` under way that may bring a spare filed under ``key``.

    The pool makes the next spare when a run's context closes, not when a spare is handed out:
    made at hand-out, it was made beside that run's first navigation and slowed it by about as
    much as the spare saved (goto 165 against 55 ms, bench/README.md). A run that comes while the
    spare is being made waits for it: finishing it is quicker than a second context beside it."""
    if refill is None or refill.done():
        return
    pending = pending_keys(plan)
    if pending is None or key in pending:
        await asyncio.wait({refill}, timeout=timeout_s)


def pending_keys(plan: SparePlan) -> list[str] | None:
    """The keys of the spares ``plan`` still expects (None: every spare is)."""
    pending = plan.pending()
    if pending is None:
        return None
    return [asked_for(options)[1] for options in pending]


async def open_page(context: BrowserContext) -> None:
    """The spare's page, ready for its run (``context.pages[0]``)."""
    from browserq import stealth

    await stealth.new_page(context)  # waits for the identity's overrides; plain new_page otherwise


@dataclass(eq=False)
class Spare:
    context: BrowserContext
    instance: Instance
    key: str


class Spares:
    """The pool's spares, oldest first (their number is the ``spare`` contexts gauge)."""

    def __init__(self, meter: PoolMeter) -> None:
        self._items: deque[Spare] = deque()
        self._meter = meter

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Spare]:
        return iter(list(self._items))

    def add(self, spare: Spare) -> None:
        self._items.append(spare)
        self._meter.spare_contexts(len(self._items))

    def take(self, key: str, instance: Instance) -> tuple[Spare | None, list[Spare]]:
        """The oldest spare of ``instance`` filed under ``key`` (removed), and the spares of browsers
        that are gone or retired (removed too: the caller closes them)."""
        dead = [s for s in self._items if s.instance is not instance or not s.instance.browser.is_connected()]
        found = next((s for s in self._items if s.key == key and s not in dead), None)
        self._items = deque(s for s in self._items if s not in dead and s is not found)
        self._meter.spare_contexts(len(self._items))
        return found, dead

    def unwanted(self, pending: list[str] | None) -> list[Spare]:
        """Remove and return the spares beyond what is still expected (``pending``: one key per
        expected spare; None: every spare is); the oldest spares of a key are the ones kept."""
        if pending is None:
            return []
        left = Counter(pending)
        kept: deque[Spare] = deque()
        dropped: list[Spare] = []
        for spare in self._items:
            if left[spare.key] > 0:
                left[spare.key] -= 1
                kept.append(spare)
            else:
                dropped.append(spare)
        self._items = kept
        self._meter.spare_contexts(len(self._items))
        return dropped

    def of(self, instance: Instance) -> list[Spare]:
        """Remove and return every spare of ``instance``."""
        found = [s for s in self._items if s.instance is instance]
        self._items = deque(s for s in self._items if s.instance is not instance)
        self._meter.spare_contexts(len(self._items))
        return found

    def clear(self) -> list[Spare]:
        found, self._items = list(self._items), deque()
        self._meter.spare_contexts(0)
        return found
