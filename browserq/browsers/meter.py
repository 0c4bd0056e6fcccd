"""What the pool reports as it works (launches, recycles, contexts), to whoever measures it.

The pool is handed a :class:`PoolMeter` in its constructor (the worker's Prometheus one comes
from :mod:`browserq.tasks.observers`); without one it reports to nobody. It imports nothing of
``browserq.metrics``, so the browsers layer stays below the packages that read it.
"""

from __future__ import annotations

from typing import Protocol


class PoolMeter(Protocol):
    """Told by :class:`~browserq.browsers.pool.BrowserPool` and its spares what changed."""

    def browser_launched(self, *, first: bool, replaced_live: bool) -> None:
        """A Chromium was launched: the first, a retired one's successor, or a relaunch."""

    def browser_recycled(self, reason: str) -> None:
        """A browser was retired, for ``reason`` (:func:`browserq.browsers.instance.retire_reason`)."""

    def contexts_in_use(self, count: int) -> None:
        """Contexts held by runs now."""

    def spare_contexts(self, count: int) -> None:
        """Pre-warmed contexts waiting now."""


class UnmeteredPool:
    """The meter of a pool nobody measures: every report is dropped."""

    def browser_launched(self, *, first: bool, replaced_live: bool) -> None:
        pass

    def browser_recycled(self, reason: str) -> None:
        pass

    def contexts_in_use(self, count: int) -> None:
        pass

    def spare_contexts(self, count: int) -> None:
        pass


#: The meter of every pool built without one (it keeps no state).
UNMETERED = UnmeteredPool()

__all__ = ["UNMETERED", "PoolMeter", "UnmeteredPool"]
