"""The browser pool: pre-warmed spare contexts, recycling that drains, relaunch after a crash."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from browserq.browsers import BrowserPool, EventLoopThread
from browserq.browsers.launcher import find_browser_pid
from tests.conftest import make_settings
from tests.support.polling import wait_until
from tests.support.processes import driver_pids, is_alive


@pytest.fixture
def loop():
    thread = EventLoopThread().start()
    yield thread
    thread.stop()


def started_pool(loop: EventLoopThread, tmp_path: Path, **settings: object) -> BrowserPool:
    pool = BrowserPool(make_settings(tmp_path, **settings))
    loop.run(pool.start(), timeout=60)
    return pool


def test_runs_take_prewarmed_spares_that_are_fresh(loop, tmp_path, site) -> None:
    pool = started_pool(loop, tmp_path, context_prewarm=2)
    try:
        assert pool.spare_contexts == 2

        async def use_one(write: bool) -> str:
            context = await pool.new_context()
            page = await context.new_page()
            await page.goto(f"{site.url}/storage")
            if write:
                await page.evaluate("document.cookie = 'seen=1; max-age=3600'")
            cookie = await page.evaluate("document.cookie")
            await pool.close_context(context)
            return cookie

        assert loop.run(use_one(True)) == "seen=1"
        assert loop.run(use_one(False)) == ""  # a spare is never handed to a second run
        assert pool.spare_hits == 2
        wait_until(lambda: pool.spare_contexts == 2, 30, "the spares refilled in the background")
        assert pool.open_contexts == 0
        # A run with options of its own gets a context made for it.
        context = loop.run(pool.new_context(locale="de-DE"))
        assert pool.spare_hits == 2
        loop.run(pool.close_context(context))
    finally:
        loop.run(pool.stop())


def test_the_next_spare_is_made_after_a_run_and_the_next_run_waits_for_it(loop, tmp_path) -> None:
    """A spare made while a run's page loads slows that page about as much as the spare saves
    (bench/README.md), so the pool makes it when the run's context closes; a run that comes
    while it is being made takes it instead of making a second context beside it."""
    pool = started_pool(loop, tmp_path, context_prewarm=1)
    try:
        made = pool.contexts_created

        async def back_to_back() -> None:
            first = await pool.new_context()
            await _refill_done(pool)  # a refill started at hand-out would be waited for here
            assert pool.spare_contexts == 0  # nothing made beside the running run
            await pool.close_context(first)  # the refill starts here…
            second = await pool.new_context()  # …and this run waits for it
            assert pool.spare_hits == 2
            assert pool.contexts_created == made + 1  # only the spare the second run took
            await pool.close_context(second)

        loop.run(back_to_back(), timeout=60)
        wait_until(lambda: pool.spare_contexts == 1, 30, "the spare made after the second run")  # a loaded host
        assert pool.open_contexts == 0
    finally:
        loop.run(pool.stop())


async def _refill_done(pool: BrowserPool) -> None:
    """Wait for the pool's background refill, if one is under way (none: nothing to wait for)."""
    import asyncio

    task = pool._refill_task
    if task is not None:
        await asyncio.gather(task, return_exceptions=True)


def test_recycling_drains_the_old_browser_without_failing_its_run(loop, tmp_path, site) -> None:
    pool = started_pool(loop, tmp_path, context_prewarm=0, browser_max_contexts=3)
    try:
        first_pid = pool.pid

        async def scenario() -> tuple[int | None, str, str]:
            long_run = await pool.new_context()  # stays open across the recycle
            page = await long_run.new_page()
            await page.goto(f"{site.url}/quotes/")
            for _ in range(3):  # contexts 2..4: the 4th acquisition recycles
                context = await pool.new_context()
                await pool.close_context(context)
            new_pid = pool.pid
            await page.goto(f"{site.url}/quotes/page/2/")  # the old browser still serves its run
            title = await page.title()
            draining = pool.draining
            await pool.close_context(long_run)
            return new_pid, title, str(draining)

        new_pid, title, draining = loop.run(scenario(), timeout=60)
        assert new_pid != first_pid and pool.recycles == 1 and pool.launches == 2
        assert title and draining == "1"
        assert pool.draining == 0
        assert not is_alive(first_pid)  # closed after its last run
    finally:
        loop.run(pool.stop())


def test_a_driver_is_replaced_with_its_browser_and_stops_after_its_last_run(loop, tmp_path, site) -> None:
    """The node driver grows over its life (bench/README.md, soak_memory.py): a recycled browser's
    successor gets a new driver; the old driver serves its draining run, then exits."""
    before = driver_pids(os.getpid())
    pool = started_pool(loop, tmp_path, context_prewarm=0, browser_max_contexts=3)
    try:
        (first,) = driver_pids(os.getpid()) - before

        async def scenario() -> tuple[set[int], str]:
            long_run = await pool.new_context()  # on the first driver's browser, open across the recycle
            page = await long_run.new_page()
            await page.goto(f"{site.url}/quotes/")
            for _ in range(3):
                context = await pool.new_context()
                await pool.close_context(context)
            during = driver_pids(os.getpid()) - before
            await page.goto(f"{site.url}/quotes/page/2/")  # the old driver still serves its run
            title = await page.title()
            await pool.close_context(long_run)
            return during, title

        during, title = loop.run(scenario(), timeout=60)
        assert title and pool.recycles == 1 and pool.driver_replacements == 1 and pool.driver_restarts == 0
        assert first in during and len(during) == 2, during  # the old one and its successor
        wait_until(lambda: not is_alive(first), 15, "the replaced driver to exit after its last browser")
        (second,) = driver_pids(os.getpid()) - before
        assert second != first
        loop.run(_use_once(pool, site.url), timeout=30)  # the new driver serves runs
    finally:
        loop.run(pool.stop())
    wait_until(lambda: not (driver_pids(os.getpid()) - before), 15, "every driver to stop with the pool")


def test_a_driver_kept_for_life_when_asked(loop, tmp_path, site) -> None:
    before = driver_pids(os.getpid())
    pool = started_pool(loop, tmp_path, context_prewarm=0, browser_max_contexts=2, driver_max_browsers=0)
    try:
        (only,) = driver_pids(os.getpid()) - before
        for _ in range(3):
            loop.run(_use_once(pool, site.url), timeout=30)
        assert pool.recycles >= 1 and pool.driver_replacements == 0
        assert driver_pids(os.getpid()) - before == {only}
    finally:
        loop.run(pool.stop())


async def _use_once(pool: BrowserPool, url: str) -> None:
    context = await pool.new_context()
    try:
        page = await context.new_page()
        await page.goto(f"{url}/quotes/")
        assert await page.title()
    finally:
        await pool.close_context(context)


@pytest.mark.parametrize("setting", [{"browser_max_rss_mb": 1}, {"browser_max_age_s": 0.001}])
def test_recycling_on_memory_and_age(loop, tmp_path, setting) -> None:
    pool = started_pool(loop, tmp_path, context_prewarm=0, **setting)
    try:
        first_pid = pool.pid

        async def acquire_many() -> None:
            for _ in range(10):
                await pool.close_context(await pool.new_context())

        # up to ten browser launches: a bound for a loaded machine (parallel workers), not a timing
        loop.run(acquire_many(), timeout=180)
        assert pool.recycles >= 1 and pool.pid != first_pid
        assert pool.open_contexts == 0 and pool.draining == 0
    finally:
        loop.run(pool.stop())


def test_a_killed_browser_is_relaunched_on_the_next_acquire(loop, tmp_path) -> None:
    pool = started_pool(loop, tmp_path, context_prewarm=1)
    try:
        pid = pool.pid
        os.kill(pid, signal.SIGKILL)

        async def acquire() -> None:
            import asyncio

            for _ in range(50):  # the driver notices the disconnect within moments
                if not pool.connected:
                    break
                await asyncio.sleep(0.05)
            context = await pool.new_context()
            page = await context.new_page()
            await page.goto("about:blank")
            await pool.close_context(context)

        loop.run(acquire(), timeout=60)
        assert pool.launches == 2 and pool.pid not in (None, pid)
        assert find_browser_pid(pool.marker) == pool.pid
    finally:
        loop.run(pool.stop())


def test_closed_contexts_are_not_kept_alive(loop, tmp_path, site) -> None:
    """Every run's context (with its page, CDP sessions and the run state its listeners hold) is
    garbage once closed. The domain guard looks each spare's id up through a page session; it kept
    that session (a weak-keyed dict by page: the session holds its context, whose listeners hold
    the page), so every context stayed alive until its browser was recycled. No recycling here."""
    import gc
    import weakref

    pool = started_pool(loop, tmp_path, context_prewarm=1, browser_max_contexts=0)
    closed: list[weakref.ref] = []

    async def one_run(guarded: bool) -> None:
        context = await pool.new_context()
        page = context.pages[0]  # the spare's page
        context.on("download", lambda download: page)  # as a run's listeners do: its context holds its page
        if guarded:
            await pool.domain_guard(context).protect(context, page, ["127.0.0.1"])
        await page.goto(f"{site.url}/storage")
        closed.append(weakref.ref(context._impl_obj))
        await pool.close_context(context)

    still_alive = [0]

    def all_garbage() -> bool:
        gc.collect()
        still_alive[0] = sum(ref() is not None for ref in closed)
        return still_alive[0] == 0

    try:
        for i in range(12):
            loop.run(one_run(guarded=i % 3 == 0))
        assert pool.spare_hits == 12
        wait_until(all_garbage, 30, "the 12 closed contexts to be garbage")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {still_alive[0]} of 12 closed contexts still alive") from None
    finally:
        loop.run(pool.stop())
