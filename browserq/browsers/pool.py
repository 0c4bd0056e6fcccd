"""One long-lived Chromium per worker process, handing out a fresh isolated context per run.

The browser is launched once and reused; a *context* (cookies, storage, cache) is created for each
run and closed after it, which is what actually releases memory. Two things keep that off a run's
critical path and keep memory flat:

* **spares** — ``BROWSERQ_CONTEXT_PREWARM`` contexts, each with its page open, are made in the
  background when a run's context closes; a run whose options match a spare's exactly (nothing
  special, or the same proxy: see :mod:`~browserq.browsers.spares`) takes one instead of waiting
  for ``new_context`` + ``new_page``. A context is never handed to a second run.
* **recycling** — after ``BROWSERQ_BROWSER_MAX_CONTEXTS`` contexts, after
  ``BROWSERQ_BROWSER_MAX_AGE_S``, or when the RSS of the browser's whole process tree passes
  ``BROWSERQ_BROWSER_MAX_RSS_MB``, a new browser takes the new runs while the old one *drains*:
  it is closed only when its last run's context is. No run fails or waits because of it.

A gone browser (crashed, killed, disconnected) is relaunched at once, never because a page
misbehaved. A dead Playwright driver (the node process between us and Chromium, e.g. out of
memory) leaves ``Browser.is_connected()`` True while every call fails, so the pool watches the
driver itself and restarts driver and browser together; a driver is also replaced, like a browser,
after ``BROWSERQ_DRIVER_MAX_BROWSERS`` launches (:class:`~browserq.browsers.driver.Drivers`).
When even a restart fails the pool is *unusable* (:class:`BrowserUnusable`): the worker process
must make way. Chromium is started by :mod:`~.launcher`, retired by :mod:`~.instance`, its errors
translated by :mod:`~.errors`; launches, recycles and contexts are told to a :mod:`~.meter`.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import structlog
from playwright.async_api import Browser, BrowserContext, Playwright

from browserq.browsers.domains import DomainGuard
from browserq.browsers.driver import CLOSE_TIMEOUT_S, Drivers, driver_closed, kill_tree
from browserq.browsers.errors import BrowserUnusable
from browserq.browsers.instance import (
    RSS_CHECK_EVERY,
    Instance,
    close_browser,
    close_quietly,
    retire_reason,
)
from browserq.browsers.launcher import (
    browser_process_tree,
    find_browser_pid,
    launch_chromium,
    rss_bytes,
)
from browserq.browsers.meter import UNMETERED, PoolMeter
from browserq.browsers.spares import (
    PlainSpares,
    Spare,
    SparePlan,
    Spares,
    asked_for,
    normalized_options,
    open_page,
    pending_keys,
    spare_key,
    wait_for_spare,
)
from browserq.errors import InfrastructureError
from browserq.settings import Settings

__all__ = ["CLOSE_TIMEOUT_S", "DEFAULT_CONTEXT_OPTIONS", "RSS_CHECK_EVERY", "BrowserPool", "BrowserUnusable",
           "SparePlan", "driver_closed"]

log = structlog.get_logger(__name__)

#: Context defaults: a desktop size, not Playwright's tell-tale 1280x720; downloads on (download steps).
DEFAULT_CONTEXT_OPTIONS: dict[str, Any] = {
    "viewport": {"width": 1366, "height": 768},
    "accept_downloads": True,
}


class BrowserPool:
    """Owns Playwright and the worker's Chromium; use it only on the loop that started it."""

    def __init__(self, settings: Settings, *, spares: SparePlan | None = None, meter: PoolMeter = UNMETERED) -> None:
        self._settings, self._meter = settings, meter  # the meter: told launches, recycles, contexts
        self._plan: SparePlan = spares or PlainSpares()
        self._drivers = Drivers(settings.driver_max_browsers)
        self._current: Instance | None = None
        self._draining: list[Instance] = []
        self._owner: dict[BrowserContext, Instance] = {}
        self._spares = Spares(self._meter)
        self._refill_task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._acquisitions = 0
        self.launches = self.recycles = self.driver_restarts = 0
        #: Why this pool cannot give out contexts any more (None while it can).
        self.unusable: str | None = None
        self.contexts_created = self.spare_hits = 0
        self._stopping = False

    # --- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the driver, launch Chromium, warm it with one page and fill the spares."""
        self._stopping = False
        await self._drivers.start()
        await self._ensure_browser()
        context = await self._create(self._current_instance(), {})
        try:
            page = await context.new_page()
            await page.goto("about:blank")
        finally:
            await self.close_context(context)
        self._schedule_refill()  # the spares are ready on return
        if self._refill_task is not None:
            await asyncio.gather(self._refill_task, return_exceptions=True)

    async def stop(self) -> None:
        """Close every context, every browser and the driver; safe to call twice."""
        self._stopping = True  # no spare is made for a run that will not come
        if self._refill_task is not None:
            self._refill_task.cancel()
            await asyncio.gather(self._refill_task, return_exceptions=True)
            self._refill_task = None
        for spare in self._spares.clear():
            await close_quietly(spare.context)
        for context in list(self._owner):
            await self.close_context(context)
        for instance in self._instances():
            await close_browser(instance)
        self._draining.clear()
        self._current = None
        await self._drivers.stop()

    async def _ensure_browser(self) -> Instance:
        async with self._lock:
            if self.unusable is not None:
                raise BrowserUnusable(self.unusable)
            current = self._current
            if current is not None and self._alive(current) and not current.retiring:
                return current
            if self._drivers.current is None:
                raise RuntimeError("BrowserPool.start() was not called")
            if self.driver_lost:
                await self._restart_driver()
            elif current is not None and not current.browser.is_connected():
                log.warning("browser disconnected; relaunching", previous_pid=current.pid)
                self._forget(current)
                await self._close(current)
            browser, marker, driver = await self._launch()
            self._current = Instance(browser, marker, find_browser_pid(marker), driver=driver, engine=self._settings.browser)
            if self._settings.stealth:
                from browserq import stealth

                self._current.host = await stealth.probe_host(browser)
            self.launches += 1
            self._meter.browser_launched(first=self.launches == 1, replaced_live=current is not None)
            log.info("browser launched", pid=self._current.pid, launches=self.launches)
            return self._current

    async def _launch(self) -> tuple[Browser, str, Playwright]:
        """Launch Chromium; after a failure, once more with a fresh driver; then give up
        (``launch_chromium`` already raises a :class:`BrowserLaunchFailed` that says what to fix)."""
        first_start = self.launches == 0
        try:
            return await self._launch_on(await self._drivers.for_launch())
        except Exception as exc:
            if first_start:
                raise  # a bad installation or setting: Runtime.start reports it
            log.warning("browser relaunch failed; restarting the driver", error=str(exc)[:300])
        try:
            await self._restart_driver()
            return await self._launch_on(await self._drivers.for_launch())
        except Exception as exc:
            self.unusable = f"could not relaunch Chromium, even with a fresh Playwright driver: {exc}"
            log.error("browser pool unusable", reason=self.unusable[:300])
            raise BrowserUnusable(self.unusable) from exc

    async def _launch_on(self, driver: Playwright) -> tuple[Browser, str, Playwright]:
        browser, marker = await launch_chromium(driver, self._settings)
        self._drivers.launched(driver)
        return browser, marker, driver

    async def _restart_driver(self) -> None:
        """A new Playwright driver; the old one's browsers (not a replaced driver's) are killed."""
        log.warning("playwright driver lost; restarting it", previous_browser_pid=self.pid)
        lost = [i for i in self._instances() if i.driver is self._drivers.current or driver_closed(i.driver)]
        for instance in lost:
            self._forget(instance)
            kill_tree(instance.marker)
        self._draining = [instance for instance in self._draining if instance not in lost]
        self._current = None
        self._spares.clear()  # their browsers are killed above
        await self._drivers.restart()
        self.driver_restarts += 1

    async def _close(self, instance: Instance) -> None:
        """Close a browser; a replaced driver whose last browser this was stops with it."""
        await close_browser(instance)
        await self._drivers.closed(instance.driver)

    def _alive(self, instance: Instance) -> bool:
        return instance.browser.is_connected() and not driver_closed(instance.driver)

    @property
    def driver_lost(self) -> bool:
        """The current driver's process is gone: every browser it launched is unreachable."""
        return self._drivers.lost

    @property
    def driver_replacements(self) -> int:  # after BROWSERQ_DRIVER_MAX_BROWSERS launches, not deaths
        return self._drivers.replacements

    def _current_instance(self) -> Instance:
        assert self._current is not None
        return self._current

    def _instances(self) -> list[Instance]:
        """Every browser this pool owns: the draining ones and the current one."""
        return [*self._draining, *([self._current] if self._current else [])]

    def _forget(self, instance: Instance) -> None:
        for context in list(instance.in_use):
            self._owner.pop(context, None)
        instance.in_use.clear()
        self._spares.of(instance)  # its browser is gone, and their contexts with it

    # --- contexts --------------------------------------------------------------------------
    async def new_context(
        self, *, identity_seed: str | None = None, region: str | None = None, **options: Any
    ) -> BrowserContext:
        """A fresh isolated context for one run: a pre-warmed spare when the run asks for
        nothing special, else a new one with ``options``. Relaunches a dead browser first.

        With stealth on, every context presents a coherent visitor; ``identity_seed`` (a named
        identity) makes it the same visitor every time, ``region`` matches it to a proxy's region.
        """
        self._acquisitions += 1
        await self._maybe_recycle()
        instance = await self._ensure_browser()
        options = normalized_options(identity_seed, region, options)
        key = spare_key(options)
        if key is not None:
            await wait_for_spare(self._refill_task, self._plan, key)
        if key is not None and self._spares:
            spare, dead = self._spares.take(key, instance)
            for other in [*dead, *self._spares.unwanted(pending_keys(self._plan))]:
                await close_quietly(other.context)
            if spare is not None:
                self._hand_out(spare.context, instance)
                self.spare_hits += 1
                return spare.context  # the next spare is made when a run's context closes
        context = await self._create(instance, options)
        self._hand_out(context, instance)
        return context

    async def _create(self, instance: Instance, options: dict[str, Any]) -> BrowserContext:
        options = dict(options)
        seed, region = options.pop("_identity", (None, None))
        fingerprint = None
        if self._settings.stealth and instance.host is not None:
            from browserq import stealth

            fingerprint = stealth.Fingerprint.generate(
                seed or uuid.uuid4().hex, chrome_version=instance.host.chrome_version,
                region=region, host=instance.host,
            )
            options = {**stealth.context_options(fingerprint), **options}
        try:
            context = await instance.browser.new_context(**{**DEFAULT_CONTEXT_OPTIONS, **options})
            if fingerprint is not None:
                from browserq import stealth

                await stealth.apply(context, fingerprint, host=instance.host)
        except Exception as exc:
            if not self._alive(instance):
                raise InfrastructureError(f"browser disconnected while creating a context: {exc}") from exc
            raise
        instance.contexts_created += 1
        self.contexts_created += 1
        return context

    def _hand_out(self, context: BrowserContext, instance: Instance) -> None:
        instance.in_use.add(context)
        self._owner[context] = instance
        self._meter.contexts_in_use(len(self._owner))

    def domain_guard(self, context: BrowserContext) -> DomainGuard:
        """The document guard of the browser that owns ``context`` (a context from new_context)."""
        instance = self._owner.get(context)
        if instance is None:
            raise RuntimeError("domain_guard() is for contexts handed out by new_context()")
        return instance.guard_of()

    async def close_context(self, context: BrowserContext) -> None:
        """Close a run's context, never raising; a drained browser is closed after its last one."""
        instance = self._owner.pop(context, None)
        if instance is not None and instance.guard is not None:
            try:
                await instance.guard.release(context)
            except Exception as exc:
                log.warning("domain guard release failed", error=str(exc))
        await close_quietly(context)
        self._meter.contexts_in_use(len(self._owner))
        if instance is None:
            return
        instance.in_use.discard(context)
        self._schedule_refill()  # now, not at hand-out: see spares.wait_for_spare
        if instance.retiring and not instance.in_use and instance in self._draining:
            self._draining.remove(instance)
            await self._close(instance)
            log.info("retired browser closed", pid=instance.pid, reason=instance.retire_reason)

    # --- spares ------------------------------------------------------------------------------
    def _schedule_refill(self) -> None:
        if self._settings.context_prewarm <= 0 or self._stopping:
            return
        if self._refill_task is None or self._refill_task.done():
            self._refill_task = asyncio.get_running_loop().create_task(self._refill())

    async def _refill(self) -> None:
        """Top the spares up (in the background, while runs execute), as the plan says."""
        try:
            for stale in self._spares.unwanted(pending_keys(self._plan)):
                await close_quietly(stale.context)
            while len(self._spares) < self._settings.context_prewarm:
                instance = self._current
                if instance is None or instance.retiring or not instance.browser.is_connected():
                    return
                asked = await self._plan.next_options()
                if asked is None:
                    return
                options, key = asked_for(asked)
                context = await self._create(instance, options)
                await open_page(context)  # the run's page, ready too (use context.pages[0])
                try:  # the guard's lookup, off the run's path (protect() does it otherwise)
                    await instance.guard_of().prepare(context, context.pages[0])
                except Exception as exc:
                    log.debug("spare not prepared for the domain guard", error=str(exc))
                if instance is not self._current:
                    await close_quietly(context)
                    return
                self._spares.add(Spare(context, instance, key))
        except Exception as exc:
            log.debug("spare context not created", error=str(exc))

    # --- recycling ---------------------------------------------------------------------------
    async def _maybe_recycle(self) -> None:
        instance = self._current
        if instance is None or not instance.browser.is_connected():
            return
        reason = retire_reason(instance, self._settings, check_rss=self._acquisitions % RSS_CHECK_EVERY == 0)
        if reason:
            await self._retire(instance, reason)

    async def _retire(self, instance: Instance, reason: str) -> None:
        """New runs go to a fresh browser; this one closes when its last context does."""
        async with self._lock:
            if instance is not self._current or instance.retiring:
                return
            instance.retiring, instance.retire_reason = True, reason
            spares = [spare.context for spare in self._spares.of(instance)]
            self._current = None
            self.recycles += 1
            self._meter.browser_recycled(reason)
        log.info("recycling browser", pid=instance.pid, reason=reason, in_use=len(instance.in_use))
        for context in spares:
            await close_quietly(context)
        if instance.in_use:
            self._draining.append(instance)
        else:
            await self._close(instance)

    # --- health ------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._current is not None and self._alive(self._current)

    @property
    def pid(self) -> int | None:
        """PID of the browser taking new runs."""
        return self._current.pid if self._current else None

    @property
    def marker(self) -> str | None:
        return self._current.marker if self._current else None

    def rss_bytes(self) -> int:
        """Resident memory of every Chromium process tree this pool owns (draining ones too)."""
        return sum(rss_bytes(browser_process_tree(i.marker)) for i in self._instances())

    @property
    def open_contexts(self) -> int:
        """Contexts handed to runs and not closed yet (spares not counted)."""
        return len(self._owner)

    @property
    def spare_contexts(self) -> int:
        return len(self._spares)

    @property
    def draining(self) -> int:
        return len(self._draining)
