"""Who the run is in the browser: the identity's storage and fingerprint, the proxy, and the
per-run limits (resource blocking, fleet-wide rate limits, downloads) installed on its context.

An identity keeps what the site gave it (cookies, storage, encrypted) for its next run, and
keeps its sticky proxy while that proxy is healthy; the shared proxy health hears how the run
went.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import structlog
from playwright.async_api import BrowserContext, Page

from browserq.actions.download_watch import DownloadWatch
from browserq.actions.files import RunFiles
from browserq.browsers import api
from browserq.browsers.document_bodies import WHOLE_BODY_DRIVERS, bound_of
from browserq.errors import Codes, StepFailed
from browserq.limits import install_blocking, install_navigation_gate
from browserq.proxies import Proxy
from browserq.runner.base import SNAPSHOT_TIMEOUT_S, RunnerBase
from browserq.runner.state import RunState
from browserq.templates import render

log = structlog.get_logger(__name__)


class SessionMixin(RunnerBase):
    """The context's options and limits; the identity's storage and proxy; proxy health."""

    async def _context_options(self, state: RunState) -> dict[str, Any]:
        """Storage to restore (a checkpoint's, else the identity's) and the proxy for this run."""
        request = state.request
        options: dict[str, Any] = {}
        storage = request.resume.storage if request.resume else request.identity_storage
        if storage:
            options["storage_state"] = storage
        if request.identity is not None:
            options["identity_seed"] = request.identity.fingerprint_seed
            options["region"] = request.identity.region
        if self.proxies is not None:
            state.browser.proxy = await asyncio.to_thread(self._proxy_for, state)
            identity, proxy = request.identity, state.browser.proxy
            if identity is not None and proxy is not None and proxy.id != identity.proxy_id:
                await state.journal.identity_proxy(proxy.id)  # its new sticky proxy
            options.update(self.proxies.context_options(state.browser.proxy))
            if state.browser.proxy is not None and state.browser.proxy.region and not options.get("region"):
                options["region"] = state.browser.proxy.region
            if state.browser.proxy is not None:
                log.info("run via proxy", run_id=request.run_id, proxy=state.browser.proxy.label)
        return options

    def _proxy_for(self, state: RunState) -> Proxy | None:
        """An identity keeps its proxy while that proxy is healthy (then gets a new sticky one);
        anonymous runs follow the configured strategy."""
        assert self.proxies is not None
        identity = state.request.identity
        if identity is None:
            return self.proxies.choose(domain=_start_host(state))
        by_id = {p.id: p for p in self.proxies.proxies}
        current = by_id.get(identity.proxy_id or "")
        if current is not None and not self.proxies.health.is_cooling(current):
            return current
        return self.proxies.choose(domain=_start_host(state), identity=identity.name)

    async def _save_identity(self, state: RunState) -> None:
        """Keep what the site gave this visitor (cookies, storage) for the identity's next run."""
        identity = state.request.identity
        if identity is None or state.browser.context is None or state.interrupt.kind or not self.pool.connected:
            return
        try:
            await self._unblock(state)
            storage = await asyncio.wait_for(state.browser.context.storage_state(indexed_db=True), SNAPSHOT_TIMEOUT_S * 2)
            await self._store_identity_storage(state, storage)
        except Exception as exc:
            log.warning("identity storage not saved", identity=identity.name, error=str(exc))

    async def _store_identity_storage(self, state: RunState, storage: dict[str, Any]) -> None:
        """The identity's storage, encrypted (never in clear), through the journal."""
        identity = state.request.identity
        assert identity is not None
        token = self.secret_box.encrypt_json(storage, why="identities keep their browser storage encrypted")
        await state.journal.identity_storage(token)

    async def _report_proxy(self, state: RunState, status: str, failure: StepFailed | None) -> None:
        """Tell the shared proxy health how this run went (a failing proxy cools down)."""
        proxy, manager = state.browser.proxy, self.proxies
        if proxy is None or manager is None:
            return
        try:
            if failure is not None and failure.code is Codes.PROXY_FAILED:
                await asyncio.to_thread(manager.report_error, proxy, failure.message)
            elif failure is not None and failure.code is Codes.BLOCKED:
                status_code = 429 if "429" in failure.message else 403
                await asyncio.to_thread(manager.report_response, proxy, status_code, "")
            elif status == "completed":
                await asyncio.to_thread(manager.report_success, proxy)
        except Exception as exc:
            log.warning("proxy health not updated", error=str(exc))

    async def _install_limits(self, context: BrowserContext, state: RunState) -> None:
        """Resource blocking and the fleet-wide per-domain rate limits, for every page load."""
        tsettings = state.request.loaded.template.settings
        if tsettings.block_resources:
            state.browser.blocked = await install_blocking(context, frozenset(tsettings.block_resources))
        if self.rate_limiter is not None:
            limiter = self.rate_limiter.for_template(tsettings.rate_limits)
            if limiter.enabled:
                state.browser.gate = await install_navigation_gate(context, limiter, deadline=state.deadline)


    def _watch_downloads(self, context: BrowserContext, state: RunState) -> None:
        """The run's file limits, and the watch that holds every download of the context to them
        while its bytes arrive (a download no step asked for that a limit stops is a run warning)."""
        files = RunFiles.of(self.settings, state.request.run_id, state.journal.artifacts.read_bytes)

        def warn(code: str, message: str) -> None:
            self._warn(state, files.step_path, code, message)

        files.watch = DownloadWatch(context, files, warn)
        state.files = files

    async def _bound_documents(self, context: BrowserContext, page: Page, state: RunState) -> None:
        """Under a driver that reads documents whole (patchright), the run's downloads by
        navigation are read by browserq instead, at most the limit (:mod:`browserq.browsers.document_bodies`)."""
        files = state.files
        if api.NAME not in WHOLE_BODY_DRIVERS or files is None or files.watch is None or context.browser is None:
            return
        await bound_of(context.browser).watch(context, page, files.max_download_bytes, files.watch.refused_unstarted)


def _start_host(state: RunState) -> str | None:
    """The host of the first navigation (for proxies sticky per domain), when it is known."""
    first = state.request.loaded.template.steps[0]
    if getattr(first, "action", None) != "navigate":
        return None
    try:
        return urlsplit(str(render(first.url, state.scope()))).hostname
    except Exception:
        return None
