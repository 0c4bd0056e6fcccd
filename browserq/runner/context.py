"""The run's browser context, from open to close: who the run is in the browser (the identity's
storage and fingerprint, the proxy), the per-run limits installed on it (resource blocking,
fleet-wide rate limits, downloads), the page and its guards.

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

from browserq import stealth
from browserq.actions.download_watch import DownloadWatch
from browserq.actions.files import RunFiles
from browserq.browsers import api
from browserq.browsers.document_bodies import WHOLE_BODY_DRIVERS, bound_of
from browserq.errors import Codes, StepFailed
from browserq.limits import install_blocking, install_navigation_gate
from browserq.proxies import Proxy
from browserq.runner.capture import PageActivity
from browserq.runner.dialogs import DialogAnswerer
from browserq.runner.page import SNAPSHOT_TIMEOUT_S, warn
from browserq.runner.parts import RunParts
from browserq.runner.state import RunState
from browserq.runner.storage import StorageReader
from browserq.runner.tabs import Tabs
from browserq.runner.trace import open_trace
from browserq.runner.watchdog import PageWatchdog
from browserq.templates import NavigateStep, render

log = structlog.get_logger(__name__)


class ContextLease:
    """Opens the run's context (options, limits, trace, page, guards) and lets it go: the
    identity's storage kept, the proxy's health told, the context closed without evidence."""

    def __init__(self, parts: RunParts) -> None:
        self.parts = parts
        self.pool = parts.pool
        self.settings = parts.settings
        self.proxies = parts.proxies

    async def open(self, state: RunState) -> None:
        """A fresh context for the run: storage, proxy, limits, trace, the page and its guards."""
        tsettings = state.request.loaded.template.settings
        browser = state.browser
        context = await self.pool.new_context(**await self._context_options(state))
        browser.context = context
        browser.activity = PageActivity(
            context,
            console_lines=self.settings.snapshot_console_lines,
            network_entries=self.settings.snapshot_network_entries,
        )
        context.set_default_timeout(tsettings.step_timeout_s * 1000)
        request = state.request
        browser.storage = StorageReader(context, request.resume.storage if request.resume else request.identity_storage)
        await self._install_limits(context, state)
        self._watch_downloads(context, state)  # every download, measured while it arrives
        browser.trace = await open_trace(
            context, state.journal.artifact_base, tsettings.trace, retried_run=state.request.run_attempt > 1
        )
        # Before any page loads: every dialog of every page is answered (and recorded).
        browser.dialogs = DialogAnswerer(context, tsettings.dialogs, state.redactor, human=tsettings.human_input)
        page = context.pages[0] if context.pages else await stealth.new_page(context)
        browser.tabs = Tabs(context, browser)  # follows popups; moves page and watchdog
        browser.tabs.adopt(page, PageWatchdog(context, page))
        await self._bound_documents(context, page, state)  # under patchright (document_bodies)
        # Before the first request of the run (resume and steps): a foreign document never leaves.
        browser.domains = await self.pool.domain_guard(context).protect(
            context, page, tsettings.allowed_domains, strict=tsettings.network == "strict"
        )
        assert browser.watchdog is not None
        await browser.watchdog.attach()

    async def close(self, state: RunState) -> None:
        """Let the context go after the run (its evidence saved): the trace's chunks discarded,
        every page's watchdog detached, the download watch closed, the context closed."""
        browser = state.browser
        if browser.trace is not None:
            browser.trace.discard()  # chunks of a trace that was not merged hold secrets in clear
        if browser.tabs is not None:  # every page's watchdog (popups too)
            await browser.tabs.detach_all()
        elif browser.watchdog is not None:
            await browser.watchdog.detach()
        if state.files is not None and state.files.watch is not None:
            state.files.watch.close()  # Playwright deletes what is left with the context
        if browser.context is not None:
            await self.pool.close_context(browser.context)  # closes every page the run opened

    async def drop(self, state: RunState) -> None:
        """Close the context with no evidence and no trace (nothing failed, or nothing may be written)."""
        if state.browser.trace is not None:
            state.browser.trace.discard()
        if state.browser.context is not None:
            await self.pool.close_context(state.browser.context)

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

    async def save_identity(self, state: RunState) -> None:
        """Keep what the site gave this visitor (cookies, storage) for the identity's next run."""
        identity = state.request.identity
        if identity is None or state.browser.context is None or state.interrupt.kind or not self.pool.connected:
            return
        try:
            await self.parts.unblock(state)
            storage = await asyncio.wait_for(state.browser.context.storage_state(indexed_db=True), SNAPSHOT_TIMEOUT_S * 2)
            await self.store_identity_storage(state, dict(storage))
        except Exception as exc:
            log.warning("identity storage not saved", identity=identity.name, error=str(exc))

    async def store_identity_storage(self, state: RunState, storage: dict[str, Any]) -> None:
        """The identity's storage, encrypted (never in clear), through the journal."""
        identity = state.request.identity
        assert identity is not None
        token = self.parts.secret_box.encrypt_json(storage, why="identities keep their browser storage encrypted")
        await state.journal.identity_storage(token)

    async def report_proxy(self, state: RunState, status: str, failure: StepFailed | None) -> None:
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
        if self.parts.rate_limiter is not None:
            limiter = self.parts.rate_limiter.for_template(tsettings.rate_limits)
            if limiter.enabled:
                state.browser.gate = await install_navigation_gate(context, limiter, deadline=state.deadline)

    def _watch_downloads(self, context: BrowserContext, state: RunState) -> None:
        """The run's file limits, and the watch that holds every download of the context to them
        while its bytes arrive (a download no step asked for that a limit stops is a run warning)."""
        files = RunFiles.of(self.settings, state.request.run_id, state.journal.artifacts.read_bytes)

        def warn_run(code: str, message: str) -> None:
            warn(state, files.step_path, code, message)

        files.watch = DownloadWatch(context, files, warn_run)
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
    if not isinstance(first, NavigateStep):
        return None
    try:
        return urlsplit(str(render(first.url, state.scope()))).hostname
    except Exception:
        return None
