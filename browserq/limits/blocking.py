"""Block heavy resources (images, fonts, media, stylesheets) for a run's browser context.

One ``context.route("**/*")`` handler looks at ``request.resource_type``: blocked kinds are aborted
(``blockedbyclient``) and counted, everything else is handed on with ``route.fallback()`` — which
continues the request unless another handler (registered earlier) wants it, so this composes with
other routes. Note that any route on a context turns off Chromium's HTTP cache for it (fine for a
fresh per-run context).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from browserq.limit_specs import BLOCKABLE, validate_block_kinds
from browserq.limits.errors import InvalidBlockKind

if TYPE_CHECKING:  # pragma: no cover
    from playwright.async_api import BrowserContext, Route

_PLURAL = {
    "image": "images",
    "font": "fonts",
    "media": "media requests",
    "stylesheet": "stylesheets",
}


@dataclass
class BlockStats:
    """What a context's blocking did: ``blocked`` counts by kind."""

    kinds: frozenset[str]
    blocked: Counter[str] = field(default_factory=Counter)
    installed: bool = False

    @property
    def total(self) -> int:
        return sum(self.blocked.values())

    def summary(self) -> str:
        """``"blocked 37 images, 2 fonts"`` (``"blocked nothing"`` when nothing was)."""
        if not self.total:
            return "blocked nothing"
        parts = [
            f"{n} {_PLURAL[k] if n != 1 else k}"
            for k, n in sorted(self.blocked.items(), key=lambda kv: -kv[1])
        ]
        return "blocked " + ", ".join(parts)

    def as_dict(self) -> dict[str, int]:
        return dict(self.blocked)


async def install_blocking(context: BrowserContext, kinds: Iterable[str]) -> BlockStats:
    """Abort requests of the given resource kinds in every page of ``context``; return live stats.

    An empty set installs nothing (no routing overhead, HTTP cache stays on).
    """
    wanted = validate_block_kinds(kinds)
    stats = BlockStats(wanted)
    if not wanted:
        return stats

    from browserq.browsers.api import Error as PlaywrightError

    async def handler(route: Route) -> None:
        kind = route.request.resource_type
        try:
            if kind in wanted:
                stats.blocked[kind] += 1
                await route.abort("blockedbyclient")
            else:
                await route.fallback()
        except PlaywrightError:  # the page or context closed meanwhile
            pass

    await context.route("**/*", handler)
    stats.installed = True
    return stats


#: ``BLOCKABLE``, ``InvalidBlockKind`` and ``validate_block_kinds`` are re-exported for their old
#: import path (they are defined in :mod:`browserq.limit_specs` and :mod:`browserq.limits.errors`).
__all__ = ["BLOCKABLE", "BlockStats", "InvalidBlockKind", "install_blocking", "validate_block_kinds"]
