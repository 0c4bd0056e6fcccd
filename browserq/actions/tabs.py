"""Moving the run between its pages: ``switch_tab``, ``close_tab`` and ``new_tab``; ``list_tabs``
lists them.

The pages themselves are the runner's (:mod:`browserq.runner.tabs`); an action reaches them
through its :class:`StepContext`'s ``tabs`` (:class:`TabControl`), as it reaches the store only
through ``save_artifact``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Protocol

from playwright.async_api import Page

from browserq.actions.context import StepContext
from browserq.actions.navigation import navigate
from browserq.errors import Codes, StepFailed
from browserq.guards import check_url
from browserq.templates import CloseTabStep, NavigateStep, SwitchTabStep
from browserq.templates.tab_steps import ListTabsStep, NewTabStep


class TabControl(Protocol):
    """What the runner's tabs offer an action."""

    pages: list[Page]

    @property
    def current(self) -> Page | None: ...

    def find(self, to: int | str) -> Page: ...

    async def caught_up(self, timeout_s: float) -> None: ...

    async def switch(self, page: Page) -> None: ...

    async def close_current(self, timeout_s: float) -> None: ...

    async def open_new(self, timeout_s: float) -> Page: ...


def _tabs(ctx: StepContext) -> TabControl:
    if ctx.tabs is None:
        raise StepFailed(Codes.INVALID_STEP_INPUT, "this run has no tabs to move between")
    tabs: TabControl = ctx.tabs
    return tabs


async def switch_tab(ctx: StepContext, step: SwitchTabStep) -> Any:
    """Make the page ``to`` names current: the steps after this one act on it. Pages asked for
    just before (a ``window.open`` in the last click) are waited for first, so ``last`` is one."""
    tabs = _tabs(ctx)
    await tabs.caught_up(ctx.timeout_ms / 1000)
    await tabs.switch(tabs.find(step.to))


async def close_tab(ctx: StepContext, step: CloseTabStep) -> Any:
    """Close the current page; the run goes back to its opener."""
    await _tabs(ctx).close_current(ctx.timeout_ms / 1000)


async def list_tabs(ctx: StepContext, step: ListTabsStep) -> Any:
    """The open pages, oldest first, each with its index (what ``switch_tab`` takes), URL, title
    and whether the steps act on it now."""
    tabs = _tabs(ctx)
    await tabs.caught_up(ctx.timeout_ms / 1000)
    current, listed = tabs.current, []
    for index, page in enumerate(list(tabs.pages)):
        try:
            title = await asyncio.wait_for(page.title(), ctx.timeout_ms / 1000)
        except Exception:  # a page that is closing or busy has no title to give: listed all the same
            title = ""
        listed.append({"index": index, "url": page.url, "title": title, "current": page is current})
    return listed


async def new_tab(ctx: StepContext, step: NewTabStep) -> Any:
    """Open a new page and make it current; at ``url`` (checked against allowed_domains before
    the page is opened, then loaded as ``navigate`` loads it) or blank."""
    if step.url is not None:
        check_url(step.url, ctx.settings.allowed_domains)
    tabs = _tabs(ctx)
    page = await tabs.open_new(ctx.timeout_ms / 1000)
    index = tabs.pages.index(page) if page in tabs.pages else None
    if step.url is None:
        return {"index": index, "status": None, "url": page.url}
    loaded = await navigate(dataclasses.replace(ctx, page=page), NavigateStep(url=step.url, wait_until=step.wait_until))
    return {"index": index, **loaded}
