"""The spare plan of a browser pool whose runs go through proxies.

A context's proxy is fixed when the context is made, so a generic spare is useless to a run with a
proxy. This plan makes spares a run *will* take: for each spare it reserves the proxy of a coming
anonymous run (:meth:`ProxyManager.reserve`, counted like any choice), and the next anonymous run
takes that reservation (:meth:`ProxyManager.choose`), then the pool hands it the spare made with
exactly that proxy. A reservation dropped (its proxy cooled down) is no longer pending, and the
pool closes its spare. Runs with a named identity, storage to restore or another proxy never get
one of these spares (:mod:`browserq.browsers.spares` files spares by their exact options).
"""

from __future__ import annotations

import asyncio
from typing import Any

from browserq.proxies.config import Proxy
from browserq.proxies.manager import ProxyManager

__all__ = ["ProxySpares", "proxy_context_options"]


def proxy_context_options(manager: ProxyManager, proxy: Proxy | None) -> dict[str, Any]:
    """What an anonymous run through ``proxy`` asks ``BrowserPool.new_context`` for: the proxy,
    and its region (the runner matches the visitor to the proxy's region the same way)."""
    options = manager.context_options(proxy)
    if proxy is not None and proxy.region:
        options["region"] = proxy.region
    return options


class ProxySpares:
    """A :class:`~browserq.browsers.spares.SparePlan`: one reserved proxy per spare."""

    def __init__(self, manager: ProxyManager) -> None:
        self.manager = manager

    async def next_options(self) -> dict[str, Any] | None:
        proxy = await asyncio.to_thread(self.manager.reserve)  # one Redis round trip, off the loop
        return None if proxy is None else proxy_context_options(self.manager, proxy)

    def pending(self) -> list[dict[str, Any]] | None:
        return [proxy_context_options(self.manager, proxy) for proxy in self.manager.reserved()]
