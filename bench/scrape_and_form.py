"""Benchmark: the same scrape + form work done by hand-written Playwright and by browserq.

One process, one offline :class:`~browserq.demo.site.DemoSite` on 127.0.0.1, two ways:

(a) ``playwright``: a hand-written async Playwright script. Chromium is launched once with the
    executable and flags browserq uses; each iteration opens a fresh context (same viewport as
    browserq's contexts), scrapes the 5 quote pages following ``li.next a`` (text, author, tags of
    every ``.quote``), logs in, fills and sends the contact form exactly as
    ``templates/login_form.yaml`` does (including its full-page screenshot, written to disk),
    reads ``#confirmation`` and closes the context.

(b) ``browserq``: each iteration is one ``quotes`` run (max_pages 5) and one ``login_form`` run
    through ``Runtime.run_local``: template resolution, param validation, the run record, one
    ``started`` + one ``finished`` write per step, the screenshot artifact, ``trace: on_failure``
    (tracing is recorded and thrown away on success) — everything the templates declare.

Both ways warm up (1 iteration each, not counted), then run interleaved a, b, a, b, ... Every
iteration asserts 50 quotes and a confirmation, in both ways. There are no timing asserts.

    .venv/bin/python bench/scrape_and_form.py [--iterations 15] [--db URL] [--json]

``--db``: a SQLAlchemy URL. The default is SQLite in a temporary directory. For PostgreSQL give a
server URL such as ``postgresql+psycopg://postgres@127.0.0.1:5432/test``: a scratch database
named after it (``test_bench_<random>``) is created on that server and dropped afterwards.
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
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, async_playwright

from browserq.browsers.pool import DEFAULT_CONTEXT_OPTIONS
from browserq.demo.site import DEMO_PASSWORD, DEMO_USERNAME, DemoSite
from browserq.logs import configure_logging
from browserq.runtime import Runtime
from browserq.settings import Settings, load_settings
from browserq.store.engine import mask_url, normalize_url

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "templates"

QUOTE_PAGES = 5
QUOTES_TOTAL = 50
# login_form's param defaults, used verbatim by the hand-written script.
FORM = {
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "topic": "support",
    "message": "Hello from browserq!",
}
CONFIRMATION_PREFIX = f"Thanks, {FORM['name']}! Ticket #"

# Same record shape and whitespace cleaning as browserq's extract action.
EXTRACT_QUOTES_JS = """
(elements) => {
  const clean = (s) => (s || '').replace(/\\s+/g, ' ').trim();
  const one = (el, sel) => { const f = el.querySelector(sel); return f ? clean(f.textContent) : null; };
  return elements.map((el) => ({
    text: one(el, '.text'),
    author: one(el, '.author'),
    tags: [...el.querySelectorAll('.tag')].map((t) => clean(t.textContent)),
  }));
}
"""

# Store methods: which ones write. Every call is timed (in the thread that makes it).
STORE_WRITES = (
    "save_template", "create_run", "start_run", "start_step", "record_skipped_step",
    "finish_step", "add_artifact", "finish_run",
)
STORE_READS = ("get_run", "get_template_body")


# --- (a) hand-written Playwright --------------------------------------------------------------
class HandWritten:
    """One Chromium launched like browserq launches it; a fresh context per iteration."""

    def __init__(self, settings: Settings, site_url: str, out_dir: Path) -> None:
        self.settings = settings
        self.site_url = site_url
        self.out_dir = out_dir
        self._pw: Any = None
        self.browser: Browser | None = None
        self.iteration = 0

    async def start(self) -> None:
        self._pw = await async_playwright().start()
        self.browser = await self._pw.chromium.launch(
            executable_path=self.settings.resolve_chromium(),
            headless=self.settings.headless,
            args=self.settings.chromium_launch_args(),
            chromium_sandbox=self.settings.chromium_sandbox,
        )

    async def stop(self) -> None:
        if self.browser is not None:
            await self.browser.close()
        if self._pw is not None:
            await self._pw.stop()

    async def iterate(self) -> tuple[list[dict[str, Any]], str]:
        assert self.browser is not None
        self.iteration += 1
        context = await self.browser.new_context(**DEFAULT_CONTEXT_OPTIONS)
        try:
            page = await context.new_page()
            quotes = await self._scrape(page)
            confirmation = await self._login_and_send(page)
        finally:
            await context.close()
        return quotes, confirmation

    async def _scrape(self, page: Any) -> list[dict[str, Any]]:
        await page.goto(f"{self.site_url}/quotes/")
        quotes: list[dict[str, Any]] = []
        for _ in range(QUOTE_PAGES):
            quotes += await page.locator(".quote").evaluate_all(EXTRACT_QUOTES_JS)
            next_link = page.locator("li.next a")
            if await next_link.count() == 0:
                break
            async with page.expect_navigation():
                await next_link.first.click()
        return quotes

    async def _login_and_send(self, page: Any) -> str:
        await page.goto(f"{self.site_url}/login")
        await page.fill("#username", DEMO_USERNAME)
        await page.fill("#password", DEMO_PASSWORD)
        async with page.expect_navigation():
            await page.click("button[type=submit]")
        await page.locator("#welcome").wait_for(state="attached")
        await page.fill("#name", FORM["name"])
        await page.fill("#email", FORM["email"])
        await page.select_option("#topic", FORM["topic"])
        await page.check("#priority-high")
        await page.check("#subscribe")
        await page.fill("#message", FORM["message"])
        png = await page.screenshot(full_page=True)
        shot = self.out_dir / f"{self.iteration}" / "form.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(shot.write_bytes, png)
        async with page.expect_navigation():
            await page.click("#send")
        return " ".join((await page.locator("#confirmation").text_content() or "").split())


# --- (b) browserq -------------------------------------------------------------------------------
class StoreMeter:
    """Counts and times every Store call browserq makes (wraps the bound methods of one store)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()

    def install(self, store: Any) -> None:
        for name in STORE_WRITES + STORE_READS:
            setattr(store, name, self._wrap(name, getattr(store, name)))

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - started
                with self._lock:
                    self.calls[name] += 1
                    self.seconds[name] += elapsed

        return timed

    def snapshot(self) -> tuple[Counter[str], Counter[str]]:
        with self._lock:
            return Counter(self.calls), Counter(self.seconds)


class ViaBrowserq:
    def __init__(self, settings: Settings, site_url: str) -> None:
        self.runtime = Runtime(settings)
        self.site_url = site_url
        self.meter = StoreMeter()
        self.last_run_ids: dict[str, str] = {}
        self.db_calls: list[int] = []
        self.db_writes: list[int] = []
        self.db_ms: list[float] = []

    def start(self) -> None:
        self.runtime.start()
        self.meter.install(self.runtime.store)

    def stop(self) -> None:
        self.runtime.stop()

    def iterate(self) -> tuple[list[dict[str, Any]], str]:
        calls0, secs0 = self.meter.snapshot()
        quotes_run = self.runtime.run_local(
            "quotes", {"start_url": f"{self.site_url}/quotes/", "max_pages": QUOTE_PAGES}
        )
        form_run = self.runtime.run_local(
            "login_form", {"base_url": self.site_url, "password": DEMO_PASSWORD}
        )
        calls1, secs1 = self.meter.snapshot()
        for run in (quotes_run, form_run):
            if run.status != "completed":
                raise AssertionError(
                    f"browserq run {run.run_id} {run.status}: {run.error_code} {run.error_message}"
                )
        self.last_run_ids = {"quotes": quotes_run.run_id, "login_form": form_run.run_id}
        self.db_calls.append(sum((calls1 - calls0).values()))
        self.db_writes.append(sum((calls1 - calls0)[n] for n in STORE_WRITES))
        self.db_ms.append(sum((secs1 - secs0).values()) * 1000)
        assert quotes_run.outputs.get("last_page_quotes") == 10, quotes_run.outputs
        return quotes_run.outputs["quotes"], form_run.outputs["confirmation"]

    def reset_counters(self) -> None:
        self.db_calls.clear()
        self.db_writes.clear()
        self.db_ms.clear()

    def per_run_rows(self) -> dict[str, dict[str, int]]:
        """Step rows and artifacts of the last iteration's runs (read after the timed loop)."""
        store = self.runtime.store
        rows = {}
        for kind, run_id in self.last_run_ids.items():
            steps = store.steps(run_id)
            rows[kind] = {
                "step_rows": len(steps),
                "artifacts": len(store.artifacts(run_id)),
            }
        return rows


# --- PostgreSQL scratch database ----------------------------------------------------------------
@contextmanager
def database(db: str | None, tmp: Path) -> Iterator[str]:
    """The URL to use: SQLite in ``tmp`` by default, or a scratch database on the given server."""
    if db is None:
        yield f"sqlite:///{tmp / 'browserq.db'}"
        return
    url = normalize_url(db)
    if url.get_backend_name() != "postgresql":
        yield db  # e.g. another SQLite file: used as given
        return
    import psycopg

    scratch = f"{url.database or 'browserq'}_bench_{uuid.uuid4().hex[:8]}"
    admin = url.set(drivername="postgresql", database="postgres").render_as_string(
        hide_password=False
    )
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{scratch}"')
    try:
        yield url.set(database=scratch).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')


# --- measuring ------------------------------------------------------------------------------------
def summary(samples_ms: list[float]) -> dict[str, Any]:
    ordered = sorted(samples_ms)
    p90 = statistics.quantiles(ordered, n=10, method="inclusive")[-1] if len(ordered) > 1 else ordered[0]
    return {
        "median_ms": round(statistics.median(ordered), 1),
        "p90_ms": round(p90, 1),
        "min_ms": round(ordered[0], 1),
        "max_ms": round(ordered[-1], 1),
        "samples_ms": [round(s, 1) for s in samples_ms],
    }


def check(way: str, quotes: list[dict[str, Any]], confirmation: str) -> None:
    if len(quotes) != QUOTES_TOTAL:
        raise AssertionError(f"{way}: {len(quotes)} quotes, expected {QUOTES_TOTAL}")
    if not confirmation.startswith(CONFIRMATION_PREFIX):
        raise AssertionError(f"{way}: unexpected confirmation {confirmation!r}")


def chromium_version(executable: str | None) -> str | None:
    if not executable:
        return None
    try:
        out = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="browserq-bench-") as tmp_name:
        tmp = Path(tmp_name)
        with DemoSite() as site, database(args.db, tmp) as db_url:
            settings = load_settings(
                database_url=db_url,
                templates_dir=TEMPLATES,
                artifacts_dir=tmp / "artifacts",
                log_level="WARNING",  # no per-run INFO line on stderr
            )
            configure_logging(settings)
            loop = asyncio.Runner()  # (a) lives on this thread's loop; browserq has its own
            hand = HandWritten(settings, site.url, tmp / "handwritten")
            bq = ViaBrowserq(settings, site.url)
            try:
                loop.run(hand.start())
                bq.start()

                def way_a() -> tuple[list[dict[str, Any]], str]:
                    return loop.run(hand.iterate())

                ways: dict[str, Callable[[], tuple[list[dict[str, Any]], str]]] = {
                    "playwright": way_a,
                    "browserq": bq.iterate,
                }
                # Warm-up (not counted); also checks both ways return the very same records.
                warm = {name: fn() for name, fn in ways.items()}
                for name, (quotes, confirmation) in warm.items():
                    check(name, quotes, confirmation)
                if warm["playwright"][0] != warm["browserq"][0]:
                    raise AssertionError("the two ways scraped different quote records")
                bq.reset_counters()

                samples: dict[str, list[float]] = {name: [] for name in ways}
                submissions_before = len(site.submissions)
                for i in range(args.iterations):
                    for name, fn in ways.items():
                        started = time.perf_counter()
                        quotes, confirmation = fn()
                        samples[name].append((time.perf_counter() - started) * 1000)
                        check(name, quotes, confirmation)
                    if not args.json:
                        print(
                            f"  iteration {i + 1:>3}/{args.iterations}: "
                            + "  ".join(f"{n} {samples[n][-1]:7.1f} ms" for n in ways),
                            file=sys.stderr,
                            flush=True,
                        )
                if len(site.submissions) - submissions_before != 2 * args.iterations:
                    raise AssertionError("the demo site did not get one form post per way and iteration")
                rows = bq.per_run_rows()
                version = hand.browser.version if hand.browser else None
            finally:
                bq.stop()
                loop.run(hand.stop())
                loop.close()

            a, b = summary(samples["playwright"]), summary(samples["browserq"])
            step_rows = sum(r["step_rows"] for r in rows.values())
            return {
                "benchmark": "scrape_and_form",
                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "iterations": args.iterations,
                "database": mask_url(db_url) if args.db else "sqlite (temporary file)",
                "dialect": normalize_url(db_url).get_backend_name(),
                "machine": {
                    "cpus": os.cpu_count(),
                    "platform": platform.platform(),
                    "python": platform.python_version(),
                    "playwright": metadata.version("playwright"),
                    "chromium": chromium_version(settings.resolve_chromium()) or version,
                },
                "playwright": a,
                "browserq": b,
                "ratio_median_b_over_a": round(b["median_ms"] / a["median_ms"], 3),
                "browserq_overhead": {
                    "median_extra_ms": round(b["median_ms"] - a["median_ms"], 1),
                    "runs_per_iteration": 2,
                    "per_run": rows,
                    "step_rows_per_iteration": step_rows,
                    "db_calls_per_iteration": statistics.median(bq.db_calls),
                    "db_writes_per_iteration": statistics.median(bq.db_writes),
                    "db_ms_per_iteration_median": round(statistics.median(bq.db_ms), 1),
                },
            }


def print_table(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    m = result["machine"]
    title = (
        f"scrape 5 pages + login/form, {result['iterations']} iterations, "
        f"store: {result['dialect']}"
    )
    table = Table(title=title)
    table.add_column("way")
    for col in ("median ms", "p90 ms", "min ms", "max ms"):
        table.add_column(col, justify="right")
    for way, label in (("playwright", "(a) hand-written Playwright"), ("browserq", "(b) browserq run_local")):
        s = result[way]
        table.add_row(label, *(f"{s[k]:.1f}" for k in ("median_ms", "p90_ms", "min_ms", "max_ms")))
    console.print(table)

    o = result["browserq_overhead"]
    detail = Table(title="browserq overhead (per iteration = 2 runs)", show_header=False)
    detail.add_column("what")
    detail.add_column("value", justify="right")
    detail.add_row("extra wall time vs (a), median", f"{o['median_extra_ms']:.1f} ms")
    detail.add_row("store time (sum of Store calls), median", f"{o['db_ms_per_iteration_median']:.1f} ms")
    detail.add_row("store calls / writes", f"{o['db_calls_per_iteration']:g} / {o['db_writes_per_iteration']:g}")
    for kind, r in o["per_run"].items():
        detail.add_row(f"{kind}: step rows, artifacts", f"{r['step_rows']}, {r['artifacts']}")
    console.print(detail)
    console.print(
        f"[dim]{m['chromium']} · playwright {m['playwright']} · python {m['python']} · "
        f"{m['cpus']} CPUs · {result['database']}[/dim]"
    )
    print(f"ratio b/a (median): {result['ratio_median_b_over_a']:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=15, help="measured iterations per way (default 15)")
    parser.add_argument(
        "--db",
        default=None,
        help="SQLAlchemy URL of the store; PostgreSQL gets a scratch database (default: temp SQLite)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    args = parser.parse_args(argv)
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
