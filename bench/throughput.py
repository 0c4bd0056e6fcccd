"""Benchmark: pages/s of one listing-crawl workload done eight ways, side by side in one process run.

The workload (issue 9): ``--jobs`` jobs (default 20), each walks the 5 listing pages of the demo
site's ``/quotes/`` following "Next" (``li.next a``) and extracts the 10 quotes of every page;
``--concurrency`` jobs at a time (default 2); the site (:class:`~browserq.demo.site.DemoSite`) is
served on 127.0.0.1 by this script. The ways:

1. ``raw_reused``: async Playwright, one context + page per lane, reused by every job of the lane
   (the floor: state leaks from job to job);
2. ``raw_fresh``: async Playwright, a fresh context + page per job (isolated);
3. ``crawlee``: Crawlee-Python's ``PlaywrightCrawler`` with its defaults (one shared context);
4. ``crawlee_incognito``: the same with ``use_incognito_pages=True`` (a context per page);
5. ``browserq``: ``run_template.delay("quotes", ...)`` on Redis, consumed by a real
   ``browserq worker --concurrency N`` (Celery prefork, one Chromium per child) started by this
   script, the run store and result backend on a scratch PostgreSQL database, every step recorded;
6. ``browserq_threads``: the same through one worker process with ``--pool threads`` (the
   K-runs-per-process mode); reported as not working, with the reason, when it does not work.

1t, 2t. ``raw_reused_tuned``, ``raw_fresh_tuned``: ways 1 and 2 on a Chromium that also has
   browserq's throughput flags (``browsers.flags.tuned_args``): what a hand-written script gains
   by copying them, so that browserq's own work is compared with the same browser configuration.

Every way uses browserq's Chromium executable (``settings.resolve_chromium()``); ways 1-4 have
the flags a hand-written script on this machine needs (``settings.chromium_launch_args()``: the
closed-network hygiene and the sandbox choice), 1t, 2t and browserq's workers add browserq's
tuning. Ways 3-4 are skipped with
a clear line when crawlee is not installed (``pip install -e '.[bench]'``). All ways are warmed up
(the workers: ``2 x concurrency`` runs, so every child has launched its browser), then run in
interleaved rounds (default 2); pages/s is the median over the rounds. Each job is checked: 5 pages
and 50 quotes. For the browserq ways the store's cost is read from PostgreSQL's own counters of the
scratch database (``pg_stat_database.xact_commit``/``xact_rollback`` deltas, per run) and relation
sizes (``pg_total_relation_size`` deltas of ``step_attempts``, ``runs``, ``celery_taskmeta``, per
step or run), and broker traffic from Redis ``INFO commandstats`` (server-wide: other clients of the
same Redis are counted too; a baseline rate measured while idle is subtracted). There are no
timing asserts.

    .venv/bin/python bench/throughput.py [--jobs 20] [--concurrency 2] [--rounds 2] [--json]
        [--db postgresql+psycopg://postgres@127.0.0.1:5432/test] [--broker redis://127.0.0.1:6379/12]
        [--ways raw_reused,raw_fresh,raw_reused_tuned,raw_fresh_tuned,crawlee,crawlee_incognito,
                browserq,browserq_threads]

Progress goes to stderr; with ``--json`` only the JSON goes to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import psycopg
import redis
from playwright.async_api import Browser, Page

# bench/ is on sys.path when this file is run as a script: the helpers of the in-process bench.
from scrape_and_form import (
    EXTRACT_QUOTES_JS,
    LaunchedChromium,
    browserq_revision,
    chromium_version,
    database,
)

from browserq.browsers.pool import DEFAULT_CONTEXT_OPTIONS
from browserq.demo.site import DemoSite
from browserq.settings import Settings, load_settings
from browserq.store.engine import mask_url, normalize_url

REPO = Path(__file__).resolve().parent.parent

PAGES_PER_JOB = 5
QUOTES_PER_PAGE = 10
DEFAULT_DB = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
#: Redis database of the bench's broker: none of the test suites uses 12 (tests/support/redis.py).
DEFAULT_BROKER = "redis://127.0.0.1:6379/12"
#: PostgreSQL flushes a backend's statistics at most every second, and an idle backend's after
#: 10 s (PGSTAT_IDLE_INTERVAL): wait this long before reading pg_stat_database.
PG_STATS_SETTLE_S = 11.5
#: Commits one reading of the scratch database's tables adds: the new backend's start is one
#: transaction, the statement another (checked against a known number of inserts).
OWN_XACTS_PER_READING = 2
RESULT_TIMEOUT_S = 300.0
CRAWLEE_MISSING = "skipped: crawlee not installed (pip install -e '.[bench]')"
LABELS = {
    "raw_reused": "(1) raw Playwright, reused context per lane (floor)",
    "raw_fresh": "(2) raw Playwright, fresh context per job",
    "raw_reused_tuned": "(1t) as (1), Chromium with browserq's flags",
    "raw_fresh_tuned": "(2t) as (2), Chromium with browserq's flags",
    "crawlee": "(3) Crawlee PlaywrightCrawler, default",
    "crawlee_incognito": "(4) Crawlee, use_incognito_pages=True",
    "browserq": "(5) browserq .delay(), prefork worker",
    "browserq_threads": "(6) browserq .delay(), --pool threads",
}
ALL_WAYS = tuple(LABELS)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def check_page(way: str, records: list[dict[str, Any]]) -> None:
    """Every listing page has exactly 10 quotes, each with its text and author."""
    if len(records) != QUOTES_PER_PAGE or not all(r.get("text") and r.get("author") for r in records):
        raise AssertionError(f"{way}: a page gave {len(records)} quote records: {records[:2]!r}")


# --- (1), (2) raw async Playwright -----------------------------------------------------------------
async def walk_listing(page: Page, start_url: str, way: str) -> int:
    """One job: the listing pages from ``start_url``, clicking Next; returns the pages read."""
    await page.goto(start_url)
    pages = 0
    while True:
        check_page(way, await page.locator(".quote").evaluate_all(EXTRACT_QUOTES_JS))
        pages += 1
        next_link = page.locator("li.next a")
        if pages >= PAGES_PER_JOB or await next_link.count() == 0:
            return pages
        async with page.expect_navigation():
            await next_link.first.click()


class RawPlaywright(LaunchedChromium):
    """One Chromium launched like browserq launches it; ``reuse`` decides per lane or per job."""

    def __init__(self, settings: Settings, tuned: bool = False) -> None:
        self.settings = settings
        self.tuned = tuned
        self._pw: Any = None
        self.browser: Browser | None = None

    async def crawl(self, start_url: str, jobs: int, concurrency: int, reuse: bool) -> int:
        """``jobs`` jobs on ``concurrency`` lanes pulling from one queue; returns pages read."""
        assert self.browser is not None
        browser, way = self.browser, "raw_reused" if reuse else "raw_fresh"
        queue: asyncio.Queue[int] = asyncio.Queue()
        for job in range(jobs):
            queue.put_nowait(job)

        async def lane() -> int:
            pages, kept = 0, None
            try:
                while not queue.empty():
                    queue.get_nowait()
                    if reuse:
                        kept = kept or await (await browser.new_context(**DEFAULT_CONTEXT_OPTIONS)).new_page()
                        pages += await walk_listing(kept, start_url, way)
                        continue
                    context = await browser.new_context(**DEFAULT_CONTEXT_OPTIONS)
                    try:
                        pages += await walk_listing(await context.new_page(), start_url, way)
                    finally:
                        await context.close()
            finally:
                if kept is not None:
                    await kept.context.close()
            return pages

        return sum(await asyncio.gather(*(lane() for _ in range(concurrency))))


# --- (3), (4) Crawlee ----------------------------------------------------------------------------
def crawlee_version() -> str | None:
    try:
        return metadata.version("crawlee")
    except metadata.PackageNotFoundError:
        return None


async def crawlee_crawl(
    settings: Settings, start_url: str, jobs: int, concurrency: int, incognito: bool
) -> int:
    """One crawl with a new ``PlaywrightCrawler``: each job's pages are requests of their own
    (unique key per job and page), the next one enqueued from the page's Next link — Crawlee's
    own way of following links; a new page per request. Includes the crawler's browser launch
    (outside the timing for the raw ways: about 1 % of a round here)."""
    from crawlee import ConcurrencySettings, Request
    from crawlee.crawlers import PlaywrightCrawler, PlaywrightCrawlingContext
    from crawlee.storage_clients import MemoryStorageClient

    way = "crawlee_incognito" if incognito else "crawlee"
    crawler = PlaywrightCrawler(
        browser_type="chromium",
        headless=settings.headless,
        browser_launch_options={
            "executable_path": settings.resolve_chromium(),
            "args": settings.chromium_launch_args(),
            "chromium_sandbox": settings.chromium_sandbox,
        },
        use_incognito_pages=incognito,
        concurrency_settings=ConcurrencySettings(
            min_concurrency=concurrency, max_concurrency=concurrency, desired_concurrency=concurrency
        ),
        storage_client=MemoryStorageClient(),
        configure_logging=False,
        max_request_retries=0,
    )
    pages: Counter[int] = Counter()
    # Crawlee caches storages process-wide: unique keys of an earlier crawl would be deduplicated.
    crawl = uuid.uuid4().hex[:8]

    @crawler.router.default_handler
    async def handle(context: PlaywrightCrawlingContext) -> None:
        job, number = context.request.user_data["job"], context.request.user_data["page"]
        check_page(way, await context.page.locator(".quote").evaluate_all(EXTRACT_QUOTES_JS))
        pages[job] += 1
        next_link = context.page.locator("li.next a")
        if number < PAGES_PER_JOB and await next_link.count():
            href = await next_link.first.get_attribute("href") or ""
            await context.add_requests([page_request(urljoin(context.request.url, href), job, number + 1)])

    def page_request(url: str, job: int, number: int) -> Request:
        return Request.from_url(url, unique_key=f"{crawl}/job{job}/page{number}", user_data={"job": job, "page": number})

    stats = await crawler.run([page_request(start_url, job, 1) for job in range(jobs)])
    if stats.requests_failed:
        raise AssertionError(f"{way}: {stats.requests_failed} requests failed")
    return sum(pages.values())


# --- (5), (6) browserq through Celery ------------------------------------------------------------
@dataclass
class Worker:
    """A ``browserq worker`` subprocess (its own session), the queue it serves and its log."""

    name: str
    queue: str
    log: Path
    proc: subprocess.Popen[bytes]
    failure: str | None = None

    def log_tail(self, chars: int = 1500) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def stop(self, timeout_s: float = 60.0) -> None:
        """Warm shutdown (SIGTERM to the group: finish, close browsers), SIGKILL after timeout."""
        if self.proc.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, 9)
                self.proc.wait(10)


def browserq_env(database_url: str, broker_url: str, queue: str, artifacts: Path) -> dict[str, str]:
    """The ``BROWSERQ_*`` settings of producer and workers (everything else at its default)."""
    from cryptography.fernet import Fernet

    return {
        "BROWSERQ_BROKER_URL": broker_url,
        "BROWSERQ_DATABASE_URL": database_url,
        "BROWSERQ_TEMPLATES_DIR": str(REPO / "templates"),
        "BROWSERQ_ARTIFACTS_DIR": str(artifacts),
        "BROWSERQ_QUEUE": queue,
        "BROWSERQ_SECRET_KEY": Fernet.generate_key().decode(),
    }


def worker_settings(pairs: list[str]) -> dict[str, str]:
    """``--set key=value`` as the workers' ``BROWSERQ_KEY`` environment (e.g. context_prewarm=0)."""
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--set expects KEY=VALUE, got {pair!r}")
        env[f"BROWSERQ_{key.strip().upper()}"] = value
    return env


def start_worker(name: str, env: dict[str, str], concurrency: int, pool: str, tmp: Path,
                 path: tuple[str, ...] = ()) -> Worker:
    """``browserq worker --concurrency N [--pool threads]``, waiting for Celery's "ready."; ``path``:
    directories put before the repository on the worker's ``PYTHONPATH``."""
    cli = Path(sys.executable).with_name("browserq")
    argv = [str(cli), "worker", "--concurrency", str(concurrency), "-n", f"{env['BROWSERQ_QUEUE']}@%h",
            "--without-gossip", "--without-mingle"]
    if pool != "prefork":
        argv += ["--pool", pool]  # after browserq's own --pool prefork: Celery takes the last one
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERQ_")}
    full_env.update(env, PYTHONPATH=os.pathsep.join([*path, str(REPO)]))
    log = tmp / f"worker-{name}.log"
    with log.open("ab") as handle:
        proc = subprocess.Popen(argv, env=full_env, stdout=handle, stderr=subprocess.STDOUT, cwd=REPO,
                                start_new_session=True)
    worker = Worker(name, env["BROWSERQ_QUEUE"], log, proc)
    deadline = time.monotonic() + 120
    while "ready." not in worker.log_tail(10**7):
        if proc.poll() is not None or time.monotonic() > deadline:
            worker.stop(5)
            raise RuntimeError(f"worker {name} did not start ({proc.returncode}):\n{worker.log_tail()}")
        time.sleep(0.2)
    banner = [line.strip() for line in worker.log_tail(10**7).splitlines() if "concurrency:" in line]
    progress(f"worker {name} ready: {banner[0] if banner else '?'}")
    return worker


def submit_and_wait(start_url: str, jobs: int, queue: str | None, timeout_s: float) -> int:
    """``jobs`` runs of ``quotes`` sent at once (``.delay()``; ``apply_async(queue=)`` for another
    worker's queue), then every result awaited; returns the pages read (checked per run)."""
    from browserq import run_template

    params = {"start_url": start_url, "max_pages": PAGES_PER_JOB}
    if queue is None:
        results = [run_template.delay("quotes", params=params) for _ in range(jobs)]
    else:
        results = [run_template.apply_async(args=["quotes"], kwargs={"params": params}, queue=queue)
                   for _ in range(jobs)]
    pages = 0
    deadline = time.monotonic() + timeout_s
    for result in results:
        value = result.get(timeout=max(1.0, deadline - time.monotonic()), propagate=True)
        if value.get("status") != "completed":
            raise AssertionError(f"browserq run {result.id}: {value.get('status')} {value.get('error')}")
        quotes = value["outputs"]["quotes"]
        if len(quotes) != PAGES_PER_JOB * QUOTES_PER_PAGE or value["outputs"].get("last_page_quotes") != 10:
            raise AssertionError(f"browserq run {result.id}: {len(quotes)} quotes")
        pages += PAGES_PER_JOB
    return pages


class StoreProbe:
    """What a browserq way cost the store and the broker, read from outside: PostgreSQL's
    statistics of the scratch database (``pg_stat_database``, read from the server's ``postgres``
    database so that these reads are not counted), per-table row writes and sizes
    (``pg_stat_user_tables``, ``pg_total_relation_size``: one autocommit statement in the scratch
    database per reading: two transactions, subtracted), and Redis ``INFO commandstats``."""

    COUNTERS = ("xact_commit", "xact_rollback", "tup_inserted", "tup_updated", "tup_deleted")
    TABLE_STATS = (
        "select json_object_agg(relname, json_build_array("
        "n_tup_ins, n_tup_upd, n_tup_del, pg_total_relation_size(relid))) from pg_stat_user_tables"
    )

    def __init__(self, database_url: str, broker_url: str) -> None:
        url = normalize_url(database_url)
        self.dbname = url.database
        self.scratch = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.admin = url.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
        self.redis = redis.Redis.from_url(broker_url)

    def counters(self) -> dict[str, int]:
        with psycopg.connect(self.admin, autocommit=True) as conn:
            row = conn.execute(
                f"select {', '.join(self.COUNTERS)} from pg_stat_database where datname = %s", (self.dbname,)
            ).fetchone()
        assert row is not None
        return dict(zip(self.COUNTERS, row, strict=True))

    def tables(self) -> dict[str, dict[str, int]]:
        """Rows inserted/updated/deleted and bytes per table: ONE statement (one transaction in
        the scratch database), then a pause so that its statistics are flushed (backend exit)."""
        with psycopg.connect(self.scratch, autocommit=True) as conn:
            row = conn.execute(self.TABLE_STATS).fetchone()
        time.sleep(1.0)
        assert row is not None
        return {name: dict(zip(("ins", "upd", "del", "bytes"), v, strict=True)) for name, v in row[0].items()}

    def commands(self) -> Counter[str]:
        stats = self.redis.info("commandstats")
        return Counter({k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()})


@dataclass
class StoreWindow:
    """Counters before one browserq way; ``close`` turns them into per-run figures.

    Both readings first wait until every backend has flushed its statistics (PostgreSQL does
    that at most every second, an idle backend's after 10 s); the Redis calls of everyone else
    during the first wait give the idle baseline subtracted from the broker figures.
    """

    probe: StoreProbe
    tables: dict[str, dict[str, int]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    redis_before: Counter[str] = field(default_factory=Counter)
    redis_idle_per_s: float = 0.0
    started: float = 0.0

    def open(self) -> None:
        idle0, t0 = self.probe.commands(), time.monotonic()
        time.sleep(PG_STATS_SETTLE_S)
        self.tables = self.probe.tables()  # before the counters: not in the window
        self.counters = self.probe.counters()
        self.redis_before = self.probe.commands()
        self.redis_idle_per_s = (self.redis_before.total() - idle0.total()) / (time.monotonic() - t0)
        self.started = time.monotonic()

    def close(self, runs: int) -> dict[str, Any]:
        redis_after, elapsed = self.probe.commands(), time.monotonic() - self.started
        time.sleep(PG_STATS_SETTLE_S)
        tables = self.probe.tables()  # the one reading of ours inside the window
        counters = self.probe.counters()
        d = {k: counters[k] - self.counters[k] for k in counters}
        d["xact_commit"] -= OWN_XACTS_PER_READING
        grown = {
            name: {k: v - self.tables.get(name, {}).get(k, 0) for k, v in stats.items()}
            for name, stats in tables.items()
        }
        steps = grown.get("step_attempts", {}).get("ins", 0)
        per_step = max(1, steps)
        redis_calls = redis_after.total() - self.redis_before.total()
        return {
            "runs": runs,
            "step_rows_per_run": round(steps / runs, 2),
            "xact_commit_per_run": round(d["xact_commit"] / runs, 2),
            "xact_rollback_per_run": round(d["xact_rollback"] / runs, 2),
            "tuples_written_per_run": round((d["tup_inserted"] + d["tup_updated"] + d["tup_deleted"]) / runs, 1),
            "step_attempts_bytes_per_step": round(grown.get("step_attempts", {}).get("bytes", 0) / per_step),
            "bytes_per_step_all_tables": round(sum(g["bytes"] for g in grown.values()) / per_step),
            "bytes_per_run_all_tables": round(sum(g["bytes"] for g in grown.values()) / runs),
            "redis_calls_per_run_raw": round(redis_calls / runs, 1),
            "redis_calls_per_run_minus_idle": round((redis_calls - self.redis_idle_per_s * elapsed) / runs, 1),
            "redis_idle_calls_per_s": round(self.redis_idle_per_s, 1),
            "redis_top_commands_per_run": {
                k: round(v / runs, 1) for k, v in (redis_after - self.redis_before).most_common(8)
            },
            "per_table_per_run": {
                name: {k: round(v / runs, 2) for k, v in g.items()} for name, g in sorted(grown.items()) if any(g.values())
            },
            "pg_counter_deltas": d,
        }


# --- the rounds ----------------------------------------------------------------------------------
@dataclass
class Bench:
    """Everything one process run needs; ``ways`` maps a way to a callable returning pages read."""

    args: argparse.Namespace
    settings: Settings
    start_url: str
    loop: asyncio.Runner
    raw: RawPlaywright
    raw_tuned: RawPlaywright
    workers: dict[str, Worker] = field(default_factory=dict)
    probe: StoreProbe | None = None
    ways: dict[str, Callable[[int], int]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    store: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add_async(self, way: str, make: Callable[[int], Awaitable[int]]) -> None:
        self.ways[way] = lambda jobs: self.loop.run(make(jobs))  # type: ignore[arg-type]

    def setup(self, tmp: Path, database_url: str) -> None:
        a, url = self.args, self.start_url
        for raw, suffix in ((self.raw, ""), (self.raw_tuned, "_tuned")):
            if not {f"raw_reused{suffix}", f"raw_fresh{suffix}"} & set(a.ways):
                continue
            self.loop.run(raw.start())
            for way, reuse in ((f"raw_reused{suffix}", True), (f"raw_fresh{suffix}", False)):
                if way in a.ways:
                    self.add_async(way, lambda jobs, r=raw, re=reuse: r.crawl(url, jobs, a.concurrency, re))
        for way, incognito in (("crawlee", False), ("crawlee_incognito", True)):
            if way not in a.ways:
                continue
            if crawlee_version() is None:
                self.skipped[way] = CRAWLEE_MISSING
                continue
            self.add_async(way, lambda jobs, i=incognito: crawlee_crawl(self.settings, url, jobs, a.concurrency, i))
        if {"browserq", "browserq_threads"} & set(a.ways):
            self.setup_browserq(tmp, database_url)

    def setup_browserq(self, tmp: Path, database_url: str) -> None:
        a, url = self.args, self.start_url
        queue = f"bq_bench_{uuid.uuid4().hex[:8]}"
        env = browserq_env(database_url, a.broker, queue, tmp / "artifacts")
        env.update(worker_settings(a.set))
        os.environ.update(env)  # this process is the producer, with the workers' settings
        from browserq import celery_app
        from browserq.settings import reset_settings_cache

        reset_settings_cache()
        celery_app.reset_producer_cache()
        self.probe = StoreProbe(database_url, a.broker)
        if "browserq" in a.ways:
            progress(f"starting browserq worker --concurrency {a.concurrency} (prefork)")
            self.workers["browserq"] = start_worker("prefork", env, a.concurrency, "prefork", tmp)
            self.ways["browserq"] = lambda jobs: submit_and_wait(url, jobs, None, RESULT_TIMEOUT_S)
        if "browserq_threads" in a.ways:
            progress(f"starting browserq worker --concurrency {a.concurrency} --pool threads")
            tenv = {**env, "BROWSERQ_QUEUE": f"{queue}_threads"}
            try:
                self.workers["browserq_threads"] = start_worker("threads", tenv, a.concurrency, "threads", tmp)
            except RuntimeError as exc:
                self.skipped["browserq_threads"] = f"does not work: {exc}"
                return
            self.ways["browserq_threads"] = lambda jobs: submit_and_wait(url, jobs, f"{queue}_threads", RESULT_TIMEOUT_S)

    def warm_up(self) -> None:
        """One crawl of 2 x concurrency jobs per way (the workers: every child gets a run)."""
        a = self.args
        for way in list(self.ways):
            progress(f"warm-up: {way}")
            jobs = 2 * a.concurrency
            try:
                if self.ways[way](jobs) != jobs * PAGES_PER_JOB:
                    raise AssertionError(f"{way}: not {jobs * PAGES_PER_JOB} pages in the warm-up")
            except Exception as exc:
                if way != "browserq_threads":
                    raise
                tail = self.workers[way].log_tail()
                self.skipped[way] = f"does not work: {type(exc).__name__}: {exc}; worker log tail:\n{tail}"
                self.workers.pop(way).stop(10)
                del self.ways[way]

    def rounds(self) -> None:
        a = self.args
        self.samples = {way: [] for way in self.ways}
        self.store = {way: [] for way in self.ways if way.startswith("browserq")}
        for r in range(a.rounds):
            for way, fn in self.ways.items():
                window = StoreWindow(self.probe) if way in self.store and self.probe else None
                if window:
                    window.open()
                started = time.perf_counter()
                pages = fn(a.jobs)
                elapsed = time.perf_counter() - started
                if pages != a.jobs * PAGES_PER_JOB:
                    raise AssertionError(f"{way}: {pages} pages, expected {a.jobs * PAGES_PER_JOB}")
                self.samples[way].append(pages / elapsed)
                extra = ""
                if window:
                    self.store[way].append(window.close(a.jobs))
                    extra = f" ({self.store[way][-1]['xact_commit_per_run']} commits/run)"
                progress(f"round {r + 1}/{a.rounds}: {way:<18} {pages / elapsed:6.2f} pages/s "
                         f"({elapsed:6.1f} s){extra}  load {os.getloadavg()[0]:.1f}")

    def close(self) -> None:
        for worker in self.workers.values():
            worker.stop()
        self.loop.run(self.raw.stop())
        self.loop.run(self.raw_tuned.stop())
        self.loop.close()


def ratio(result: dict[str, Any], a: str, b: str) -> float | None:
    ways = result["ways"]
    if a in ways and b in ways:
        return round(ways[a]["pages_per_s_median"] / ways[b]["pages_per_s_median"], 3)
    return None


def median_store(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the rounds of the numeric per-run figures; the last round's details."""
    out: dict[str, Any] = {}
    for key, value in windows[-1].items():
        if isinstance(value, int | float):
            out[key] = round(statistics.median(w[key] for w in windows), 2)
        else:
            out[key] = value
    out["rounds"] = windows
    return out


def collect(bench: Bench, load_start: float) -> dict[str, Any]:
    a, s = bench.args, bench.settings
    result: dict[str, Any] = {
        "benchmark": "throughput",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "workload": {"jobs": a.jobs, "pages_per_job": PAGES_PER_JOB, "records_per_page": QUOTES_PER_PAGE,
                     "concurrency": a.concurrency, "rounds": a.rounds},
        "browserq_revision": browserq_revision(),
        "worker_settings": worker_settings(a.set),
        "database": mask_url(a.db),
        "broker": a.broker,
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m_at_start": round(load_start, 2),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "playwright": metadata.version("playwright"),
            "crawlee": crawlee_version(),
            "chromium": chromium_version(s.resolve_chromium()),
        },
        "ways": {
            way: {"pages_per_s_median": round(statistics.median(v), 2),
                  "pages_per_s_rounds": [round(x, 2) for x in v]}
            for way, v in bench.samples.items()
        },
        "skipped": bench.skipped,
        "store": {way: median_store(w) for way, w in bench.store.items() if w},
    }
    result["ratios"] = {
        f"{b}/{other}": ratio(result, b, other)
        for b in ("browserq", "browserq_threads")
        for other in ("raw_fresh", "crawlee", "crawlee_incognito", "raw_reused", "raw_fresh_tuned", "raw_reused_tuned")
    }
    return result


def print_report(result: dict[str, Any]) -> None:
    w, m = result["workload"], result["machine"]
    print(f"throughput: {w['jobs']} jobs x {w['pages_per_job']} pages x {w['records_per_page']} records, "
          f"concurrency {w['concurrency']}, {w['rounds']} interleaved rounds — {result['date']}")
    print(f"browserq {result['browserq_revision']} · {m['chromium']} · playwright {m['playwright']} · "
          f"crawlee {m['crawlee'] or '-'} · python {m['python']} · {m['cpus']} CPUs, load average "
          f"{m['load_average_1m_at_start']} at start, {m['load_average_1m_at_end']} at end")
    if result["worker_settings"]:
        print("worker settings: " + " ".join(f"{k}={v}" for k, v in result["worker_settings"].items()))
    print(f"{'way':<52} {'pages/s (median)':>16}   rounds")
    for way, label in LABELS.items():
        if way in result["ways"]:
            v = result["ways"][way]
            print(f"{label:<52} {v['pages_per_s_median']:>16.2f}   {v['pages_per_s_rounds']}")
        elif way in result["skipped"]:
            print(f"{label:<52} {result['skipped'][way]}")
    for name, value in result["ratios"].items():
        if value is not None:
            print(f"ratio {name}: {value:.2f}")
    for way, st in result["store"].items():
        print(f"{way} store/broker per run (median of rounds): {st['xact_commit_per_run']:g} commits, "
              f"{st['xact_rollback_per_run']:g} rollbacks, {st['step_rows_per_run']:g} step rows, "
              f"{st['tuples_written_per_run']:g} tuples written; bytes: {st['step_attempts_bytes_per_step']:g}"
              f"/step in step_attempts, {st['bytes_per_step_all_tables']:g}/step "
              f"({st['bytes_per_run_all_tables']:g}/run) in all tables; Redis calls {st['redis_calls_per_run_minus_idle']:g} "
              f"(raw {st['redis_calls_per_run_raw']:g}, idle rate {st['redis_idle_calls_per_s']:g}/s "
              f"subtracted; top: {st['redis_top_commands_per_run']})")
        tables = "; ".join(
            f"{name} +{t['ins']:g} ins, {t['upd']:g} upd, {t['del']:g} del, +{t['bytes']:g} B"
            for name, t in st["per_table_per_run"].items()
        )
        print(f"{way} rows written per run, by table: {tables}")


@contextmanager
def settings_for(tmp: Path) -> Iterator[Settings]:
    yield load_settings(artifacts_dir=tmp / "artifacts", templates_dir=REPO / "templates", log_level="WARNING")


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="browserq-tput-") as tmp_name:
        tmp = Path(tmp_name)
        os.environ.setdefault("CRAWLEE_STORAGE_DIR", str(tmp / "crawlee"))
        with settings_for(tmp) as settings, DemoSite() as site, database(args.db, tmp) as db_url:
            bench = Bench(args, settings, f"{site.url}/quotes/", asyncio.Runner(), RawPlaywright(settings),
                          RawPlaywright(settings, tuned=True))
            try:
                bench.setup(tmp, db_url)
                bench.warm_up()
                bench.rounds()
            finally:
                bench.close()
            for way, log in ((w, bench.workers[w].log) for w in bench.workers):
                text = log.read_text(errors="replace")
                if "Traceback" in text:
                    progress(f"note: the {way} worker's log has a traceback:\n{text[-2000:]}")
    return collect(bench, load_start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20, help="jobs per way and round (default 20)")
    parser.add_argument("--concurrency", type=int, default=2, help="jobs at a time (default 2)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    parser.add_argument("--db", default=DEFAULT_DB, help="PostgreSQL server URL; a scratch database is "
                        f"created on it and dropped afterwards (default {DEFAULT_DB})")
    parser.add_argument("--broker", default=DEFAULT_BROKER, help=f"Redis broker URL (default {DEFAULT_BROKER})")
    parser.add_argument("--ways", default=",".join(ALL_WAYS), help="comma-separated ways to run (default: all)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a browserq setting for the workers (BROWSERQ_KEY), e.g. --set context_prewarm=0")
    args = parser.parse_args(argv)
    args.ways = [w.strip() for w in args.ways.split(",") if w.strip()]
    unknown = set(args.ways) - set(ALL_WAYS)
    if unknown or min(args.jobs, args.concurrency, args.rounds) < 1:
        parser.error(f"unknown ways {sorted(unknown)} (known: {', '.join(ALL_WAYS)}) or a count below 1")
    if normalize_url(args.db).get_backend_name() != "postgresql":
        parser.error("--db must be a PostgreSQL server URL (the store figures come from pg_stat_database)")
    for way in ("crawlee", "crawlee_incognito"):
        if way in args.ways and crawlee_version() is None:
            progress(f"{way}: {CRAWLEE_MISSING}")
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
