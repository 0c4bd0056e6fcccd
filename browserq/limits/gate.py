"""Apply the rate limiter to every navigation a context makes, not only ``navigate`` steps.

A click on a link, a form submit or a script's ``location = ...`` loads a document without passing
through a ``navigate`` step. :func:`install_navigation_gate` routes document requests (any frame)
through :meth:`RateLimiter.acquire` before they leave the browser; other requests are handed on
with ``route.fallback()``, so it composes with :func:`install_blocking` and other routes.

If the wait would overrun the run's budget the request is aborted (``timedout``), the navigation
fails in Playwright, and ``gate.error`` holds the :class:`RateLimitTimeout` for the runner to raise
instead of the less telling ``net::ERR_TIMED_OUT``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from browserq.limits.errors import LimitsUnavailable, RateLimitTimeout
from browserq.limits.rate import RateLimiter

if TYPE_CHECKING:  # pragma: no cover
    from playwright.async_api import BrowserContext, Route


@dataclass
class NavigationGate:
    """What the gate did in one context."""

    deadline: float  # time.monotonic() at which the run's budget ends
    navigations: int = 0
    waited_s: float = 0.0
    #: the first limit failure (RateLimitTimeout or LimitsUnavailable), for the runner to raise
    error: RateLimitTimeout | LimitsUnavailable | None = None
    log: list[tuple[str, float]] = field(default_factory=list)  # (url, seconds waited), last 50

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error


async def install_navigation_gate(
    context: BrowserContext, limiter: RateLimiter, *, deadline: float
) -> NavigationGate:
    """Rate-limit every document request of ``context``; ``deadline`` is a ``time.monotonic()``
    instant (the run's end). A limiter with no rules installs nothing."""
    gate = NavigationGate(deadline)
    if not limiter.enabled:
        return gate
    from browserq.browsers.api import Error as PlaywrightError

    async def handler(route: Route) -> None:
        request = route.request
        try:
            if not request.is_navigation_request() or limiter.match(request.url) is None:
                await route.fallback()
                return
            try:
                waited = await limiter.acquire(
                    request.url, deadline_s=gate.deadline - time.monotonic()
                )
            except (RateLimitTimeout, LimitsUnavailable) as exc:
                gate.error = gate.error or exc
                await route.abort("timedout")
                return
            gate.navigations += 1
            gate.waited_s += waited
            gate.log = [*gate.log[-49:], (request.url, waited)]
            await route.fallback()
        except PlaywrightError:  # the page or context closed meanwhile
            pass

    await context.route("**/*", handler)
    return gate
