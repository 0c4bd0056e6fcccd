"""Evidence of a run: the failure snapshot (screenshot, DOM, console, network), blocked requests
and the Playwright trace — saved through the journal as artifacts, then the context is closed.

Everything here is bounded (FINISH_TIMEOUT_S in all, SNAPSHOT_TIMEOUT_S per part, the screenshot
SCREENSHOT_TIMEOUT_S): a sick page must not hold the worker, and evidence that cannot be taken is
logged, never fatal. Evidence counts against the run's artifact budget like any artifact; a piece
with no room left is skipped with a run warning ``ARTIFACTS_TOO_LARGE``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import structlog
from playwright.async_api import BrowserContext

from browserq.browsers.errors import first_line
from browserq.browsers.pool import BrowserPool
from browserq.errors import Codes, StepFailed
from browserq.recordable import clean_text
from browserq.runner.capture import LIVE_CONSOLE, PageActivity, replay_console
from browserq.runner.page import SCREENSHOT_TIMEOUT_S, SNAPSHOT_TIMEOUT_S, warn
from browserq.runner.state import RunState
from browserq.runner.watchdog import PageState

log = structlog.get_logger(__name__)

#: The failure snapshot, trace and context close after the run: bounded, whatever the page does.
FINISH_TIMEOUT_S = 20.0


class Evidence:
    """What a run leaves behind to explain itself, saved through the run's journal; then the
    context is closed by :meth:`ContextLease.close <browserq.runner.context.ContextLease.close>`."""

    def __init__(self, pool: BrowserPool) -> None:
        self.pool = pool  # is the browser still there to ask?

    async def save(
        self,
        context: BrowserContext,
        activity: PageActivity | None,
        state: RunState,
        failure: StepFailed | None,
    ) -> None:
        """Failure snapshot and trace (when asked for), within FINISH_TIMEOUT_S whatever the page
        does; evidence that cannot be taken is logged, never fatal."""
        try:
            async with asyncio.timeout(FINISH_TIMEOUT_S):
                await self._save_evidence(context, activity, state, failure)
        except Exception as exc:
            log.warning("could not save failure evidence", run_id=state.request.run_id, error=str(exc))

    async def _save_evidence(
        self,
        context: BrowserContext,
        activity: PageActivity | None,
        state: RunState,
        failure: StepFailed | None,
    ) -> None:
        """Unblock the page, then snapshot (failures), blocked requests and the trace."""
        tsettings = state.request.loaded.template.settings
        usable = self.pool.connected and not state.browser.crashed and state.browser.page is not None
        needs_page = failure is not None or (state.browser.trace is not None and state.browser.trace.started)
        if usable and needs_page and state.browser.watchdog is not None and not state.browser.page_dropped:
            # A script still running in the page would stall the screenshot, the DOM and the trace
            # (a run that leaves neither does not ask: closing its context needs no answer from it).
            unblocked = await state.browser.watchdog.unblock(stop_loading=failure is not None)
            state.browser.page_dropped = unblocked is PageState.DROPPED
        usable = usable and not state.browser.page_dropped
        if failure is not None and activity is not None and usable:
            await self._failure_snapshot(state, activity)
        elif failure is not None and activity is not None:
            await self._save_json(state, "console", "console.json", list(activity.console))
            await self._save_json(state, "network", "network.json", list(activity.network))
        if state.browser.domains is not None and not state.browser.domains.empty:
            await self._save_json(state, "blocked_requests", "blocked_requests.json", state.browser.domains.as_dict())
        if state.browser.trace is not None and self.pool.connected:
            keep = tsettings.trace == "always" or failure is not None
            await self._stop_trace(state, keep)

    async def _save_json(self, state: RunState, kind: str, name: str, value: Any) -> None:
        """A JSON artifact (console, network, blocked requests), redacted, linked to the failure."""
        typed = state.human.typed  # what people typed in a wait: kept out of evidence as of the trace
        data = json.dumps(typed.data(state.redactor.data(value)), indent=2, default=str).encode()
        await self._keep(state, kind, name, data, "application/json")

    async def _keep(self, state: RunState, kind: str, name: str, data: bytes, content_type: str) -> None:
        """One piece of evidence, linked to the failing step; one that the run's artifact budget
        (BROWSERQ_MAX_RUN_ARTIFACT_BYTES) has no room for is skipped, and the run says so."""
        try:
            await state.journal.artifact(state.failed.record, kind, name, data, content_type)
        except StepFailed as refused:
            if refused.code is not Codes.ARTIFACTS_TOO_LARGE:
                raise
            log.warning("evidence skipped: no room left in the run's artifact budget", kind=kind, bytes=len(data))
            warn(state, state.failed.path or "", refused.code.code, f"evidence skipped: {refused.message}")

    async def _failure_snapshot(self, state: RunState, activity: PageActivity) -> None:
        """Screenshot, DOM, console and network of the failing moment, linked to the failing step."""
        page = state.browser.page
        assert page is not None
        try:  # a page still loading (the usual reason for a timeout) would stall the capture
            assert state.browser.context is not None
            cdp = await state.browser.context.new_cdp_session(page)
            try:
                await asyncio.wait_for(cdp.send("Page.stopLoading"), 1.0)
                if not LIVE_CONSOLE:  # a patched driver sent no console events: read them now
                    activity.console.extend(await replay_console(cdp, activity.console.maxlen or 1))
            finally:
                await asyncio.wait_for(cdp.detach(), 1.0)
        except Exception as exc:
            log.debug("could not stop loading before the snapshot", error=first_line(exc))
        try:
            png = await page.screenshot(full_page=True, timeout=SCREENSHOT_TIMEOUT_S * 1000)
            await self._keep(state, "failure_screenshot", "failure.png", png, "image/png")
        except Exception as exc:
            log.info("failure screenshot unavailable", error=first_line(exc))
        try:
            html = await asyncio.wait_for(page.content(), SNAPSHOT_TIMEOUT_S)
            html = state.human.typed.text(state.redactor.text(html))  # secrets, then what people typed
            dom = clean_text(html).encode()  # a lone surrogate would not encode
            await self._keep(state, "dom", "failure.html", dom, "text/html")
        except Exception as exc:
            log.info("failure DOM unavailable", error=first_line(exc))
        await self._save_json(state, "console", "console.json", list(activity.console))
        await self._save_json(state, "network", "network.json", list(activity.network))

    async def _stop_trace(self, state: RunState, keep: bool) -> None:
        """Stop the trace; keep it (redacted inside the zip) as an artifact when asked to."""
        assert state.browser.trace is not None
        scratch = await state.browser.trace.stop(keep)
        if scratch is None:
            return
        try:
            await asyncio.to_thread(state.redactor.zip_file, scratch)
            await asyncio.to_thread(state.human.typed.zip_file, scratch)  # what people typed
            data = await asyncio.to_thread(scratch.read_bytes)
        finally:
            scratch.unlink(missing_ok=True)
        await self._keep(state, "trace", "trace.zip", data, "application/zip")
