"""The offline demo website used by ``browserq demo`` and by the test-suite.

Names are imported lazily so that ``python -m browserq.demo.site`` runs without runpy's
"found in sys.modules" warning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from browserq.demo.quotes import QUOTES, QUOTES_PER_PAGE, Quote
    from browserq.demo.site import DEMO_PASSWORD, DEMO_USERNAME, DemoSite

__all__ = ["DEMO_PASSWORD", "DEMO_USERNAME", "QUOTES", "QUOTES_PER_PAGE", "DemoSite", "Quote"]

_HOMES = {
    "QUOTES": "quotes",
    "QUOTES_PER_PAGE": "quotes",
    "Quote": "quotes",
    "DEMO_PASSWORD": "site",
    "DEMO_USERNAME": "site",
    "DemoSite": "site",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'browserq.demo' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"browserq.demo.{home}"), name)
