"""This process's live view of its runs' pages: the server (started on first use) and the
view-only watch of a running run (BROWSERQ_LIVE_VIEW_WHILE_RUNNING).

One server per runner (one per worker process), shared by every run it executes: a wait for a
person registers its session here (:mod:`browserq.runner.handoff`); the watch registers one while
the steps run. The server itself is :mod:`browserq.live`, loaded only when first needed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import structlog

from browserq.journal import Journals
from browserq.runner.page import current_page
from browserq.runner.state import RunState
from browserq.settings import Settings

if TYPE_CHECKING:
    from browserq.live.server import LiveViewServer

log = structlog.get_logger(__name__)


class LiveViews:
    """The live-view server of this process, and the view-only watch of a running run."""

    def __init__(self, settings: Settings, journals: Journals) -> None:
        self.settings = settings
        self.journals = journals  # a person's page follows a run handed over elsewhere
        #: The server, once made (tests reach it to drive a person's page).
        self.instance: LiveViewServer | None = None

    async def server(self) -> LiveViewServer | None:
        """This process's live-view server, started on first use (None if it cannot listen)."""
        server = self.instance
        if server is None:
            from browserq.live.server import LiveViewServer

            settings = self.settings
            server = LiveViewServer(settings.live_view_host, settings.live_view_port,
                                    settings.live_view_public_url,
                                    follow=self.journals.live_follow(settings.live_token_ttl_s))
            self.instance = server
        try:
            await server.start()
        except OSError as exc:
            log.warning("the live view could not listen; the person needs another way in",
                        host=self.settings.live_view_host, port=self.settings.live_view_port,
                        error=str(exc))
            return None
        return server

    @contextlib.asynccontextmanager
    async def watched(self, state: RunState) -> AsyncIterator[None]:
        """While the steps run, serve the page view-only (when the setting asks; a run without a
        lease, or a worker that cannot listen, is simply not shown)."""
        server = await self.server() if self.settings.live_view_while_running else None
        if server is None or server.base_url is None:
            yield
            return
        from browserq.live.session import LiveSession

        request = state.request
        template = request.loaded.template
        records = state.journal.handoffs
        watch = await records.begin_watch(
            live_base_url=server.base_url, for_s=template.settings.timeout_s + template.human_wait_s,
        )
        server.register(LiveSession(
            run_id=request.run_id, handoff_id=watch.id, message=watch.message, until=None,
            deadline=watch.deadline_at, page=lambda: current_page(state),
            redeem=lambda token: records.redeem_link(token, handoff_id=watch.id),
            on_input=_ignore_input, on_continue=lambda: None, on_give_up=lambda: None, view_only=True,
        ))
        try:
            yield
        finally:
            await server.unregister(watch.id, "the run's execution here ended")
            try:
                await records.end_watch(watch.id)
            except Exception as exc:  # its links die with the lease anyway (mint checks the status)
                log.debug("could not close the live view's record", error=str(exc)[:200])


async def _ignore_input(_event: Any) -> None:
    """A view-only session forwards nothing (the server refuses input before it gets here)."""
