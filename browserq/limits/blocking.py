"""Block heavy resources (images, fonts, media, stylesheets) for a run's browser context.

One ``context.route("**/*")`` handler looks at ``request.resource_type``: blocked kinds are aborted
(``blockedbyclient``) and counted, everything else is handed on with ``route.fallback()`` — which
continues the request unless another handler (registered earlier) wants it, so this composes with
other routes. Note that any route on a context turns off Chromium's HTTP cache for it (fine for a
fresh per-run context).
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from browserq.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from playwright.async_api import BrowserContext, Route

#: Playwright ``resource_type`` values a template may block.
BLOCKABLE: frozenset[str] = frozenset({"image", "font", "media", "stylesheet"})
_PLURAL = {
    "image": "images",
    "font": "fonts",
    "media": "media requests",
    "stylesheet": "stylesheets",
}


class InvalidBlockKind(ConfigError, ValueError):
    """A resource kind that cannot be blocked (also a ``ValueError`` for pydantic validators)."""


def validate_block_kinds(kinds: Iterable[str] | str | None) -> frozenset[str]:
    """Check a template's ``block_resources`` list; return it as a set.

    ``["image", "font"]`` → ``{"image", "font"}``; an unknown kind raises :class:`InvalidBlockKind`
    naming every valid kind (and the closest one, for ``images`` or ``css``-style slips).
    """
    if kinds is None:
        return frozenset()
    if isinstance(kinds, str):
        kinds = [kinds]
    out: set[str] = set()
    problems: list[str] = []
    for kind in kinds:
        name = kind.strip().lower() if isinstance(kind, str) else kind
        if name in BLOCKABLE:
            out.add(name)
            continue
        hint = ""
        if isinstance(name, str):
            close = difflib.get_close_matches(name.rstrip("s"), sorted(BLOCKABLE), n=1, cutoff=0.5)
            if name in ("css", "styles", "style"):
                close = ["stylesheet"]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
        problems.append(f"{kind!r}{hint}")
    if problems:
        raise InvalidBlockKind(
            f"cannot block resource kind(s) {', '.join(problems)}; "
            f"valid kinds: {', '.join(sorted(BLOCKABLE))}"
        )
    return frozenset(out)


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

    from playwright.async_api import Error as PlaywrightError

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
