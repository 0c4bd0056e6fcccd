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
import inspect
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

import yaml
from playwright.async_api import Browser
from sqlalchemy import event

from browserq import engines
from browserq.browsers import flags
from browserq.browsers.api import async_playwright
from browserq.browsers.pool import DEFAULT_CONTEXT_OPTIONS
from browserq.demo.site import DEMO_PASSWORD, DEMO_USERNAME, DemoSite
from browserq.execute.runtime import Runtime
from browserq.logs import configure_logging
from browserq.settings import Settings, load_settings
from browserq.store.engine import mask_url, normalize_url
from browserq.templates import LoadedTemplate, load_template_text

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

# Store methods left out of the metering (lifecycle, not per run).
STORE_UNMETERED = frozenset({"upgrade", "dispose", "current_revision", "from_settings"})
SQL_WRITES = ("INSERT", "UPDATE", "DELETE")


# --- (a) hand-written Playwright --------------------------------------------------------------
class LaunchedChromium:
    """One Chromium with browserq's executable (shared by the benches' hand-written ways).

    Its flags are those a hand-written script on this machine needs (``chromium_launch_args()``:
    the closed-network hygiene and the sandbox choice); with ``tuned`` also browserq's throughput
    flags (``browsers.flags.tuned_args``), to tell browserq's Chromium tuning from its own work.
    """

    settings: Settings
    tuned: bool = False
    _pw: Any = None
    browser: Browser | None = None

    def launch_args(self) -> list[str]:
        args = self.settings.chromium_launch_args()
        return flags.tuned_args(args, headless=self.settings.headless) if self.tuned else args

    async def start(self) -> None:
        self._pw = await async_playwright().start()
        self.browser = await self._pw.chromium.launch(
            executable_path=(executable := self.settings.resolve_chromium()),
            **engines.launch_options(self.settings.browser, executable),
            headless=self.settings.headless,
            args=self.launch_args(),
            chromium_sandbox=self.settings.chromium_sandbox,
        )

    async def stop(self) -> None:
        if self.browser is not None:
            await self.browser.close()
        if self._pw is not None:
            await self._pw.stop()


class HandWritten(LaunchedChromium):
    """One Chromium launched like browserq launches it; a fresh context per iteration."""

    def __init__(self, settings: Settings, site_url: str, out_dir: Path, tuned: bool = False) -> None:
        self.settings = settings
        self.tuned = tuned
        self.site_url = site_url
        self.out_dir = out_dir
        self._pw: Any = None
        self.browser: Browser | None = None
        self.iteration = 0


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
    """What browserq asks of its store, counted from outside (nothing in browserq is changed).

    Every public method of the Store instance is wrapped (call count and time, outermost call
    only), and SQLAlchemy engine events count SQL statements (writes = INSERT/UPDATE/DELETE),
    their execution time and the commits. Thread-safe: the runner calls the store from threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self.totals: Counter[str] = Counter()

    def install(self, store: Any) -> None:
        for name, _member in inspect.getmembers(type(store), inspect.isfunction):
            if not name.startswith("_") and name not in STORE_UNMETERED:
                setattr(store, name, self._wrap(name, getattr(store, name)))
        event.listen(store.engine, "before_cursor_execute", self._before_sql)
        event.listen(store.engine, "after_cursor_execute", self._after_sql)
        event.listen(store.engine, "commit", self._commit)

    def _add(self, **amounts: float) -> None:
        with self._lock:
            self.totals.update(amounts)

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(self._local, "depth", 0)
            self._local.depth = depth + 1
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._local.depth = depth
                if depth == 0:
                    self._add(
                        **{"calls": 1, f"call:{name}": 1, "store_s": time.perf_counter() - started,
                           # a step end stored with the run's checkpoint (journal → write_steps)
                           "checkpoints": int(kwargs.get("checkpoint") is not None)}
                    )

        return timed

    def _before_sql(self, conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        conn.info.setdefault("bench_sql_started", []).append(time.perf_counter())

    def _after_sql(self, conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        started = conn.info["bench_sql_started"].pop()
        verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "?"
        self._add(sql=1, sql_write=int(verb in SQL_WRITES), sql_s=time.perf_counter() - started)

    def _commit(self, conn: Any) -> None:
        self._add(commits=1)

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.totals)


class DriverMeter:
    """Messages browserq's Playwright client sends its driver, by method (each one a round
    trip), counted at the pipe. Only those sent from threads other than the main one: (a) runs
    on the main thread's loop, browserq on its own loop thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.totals: Counter[str] = Counter()
        self._main = threading.main_thread()

    def install(self) -> None:
        from playwright._impl.transport import PipeTransport

        send = PipeTransport.send
        meter = self

        def counted(transport: Any, message: dict[str, Any]) -> None:
            if threading.current_thread() is not meter._main:
                with meter._lock:
                    meter.totals.update({"driver": 1, f"driver:{message.get('method')}": 1})
            send(transport, message)

        PipeTransport.send = counted  # type: ignore[method-assign]

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.totals)


def wait_for_spares(runtime: Runtime, limit_s: float = 5.0) -> None:
    """Let ``runtime``'s pool finish topping up its pre-warmed spare contexts (background work the
    runs started), so that work is counted with the runs that caused it and never runs during the
    next way's measurement."""
    pool, wanted = runtime.pool, getattr(runtime.settings, "context_prewarm", 0)
    if not wanted or not hasattr(pool, "spare_contexts"):  # a revision before spares
        return
    deadline = time.monotonic() + limit_s
    while pool.spare_contexts < wanted and time.monotonic() < deadline:
        time.sleep(0.005)


class ViaBrowserq:
    """One Runtime (its own Chromium and store); ``trace_off`` runs the same templates with
    ``trace: off`` (loaded from the edited YAML text) to price the on_failure tracing."""

    def __init__(self, settings: Settings, site_url: str) -> None:
        self.settings = settings
        self.runtime = Runtime(settings)
        self.site_url = site_url
        self.meter = StoreMeter()
        self.driver = DriverMeter()
        self.last_run_ids: dict[str, str] = {}
        self.store_use: dict[bool, list[Counter[str]]] = {False: [], True: []}
        self.contexts: list[int] = []
        self._untraced: dict[str, LoadedTemplate] = {}

    def start(self) -> None:
        self.runtime.start()
        self.meter.install(self.runtime.store)
        self.driver.install()

    def stop(self) -> None:
        self.runtime.stop()

    def _params(self) -> dict[str, dict[str, Any]]:
        return {
            "quotes": {"start_url": f"{self.site_url}/quotes/", "max_pages": QUOTE_PAGES},
            "login_form": {"base_url": self.site_url, "password": DEMO_PASSWORD},
        }

    def _untraced_template(self, name: str) -> LoadedTemplate:
        if name not in self._untraced:
            text = (TEMPLATES / f"{name}.yaml").read_text()
            if "trace: on_failure" not in text:
                raise AssertionError(f"templates/{name}.yaml no longer declares trace: on_failure")
            self._untraced[name] = load_template_text(
                # Its own name: a version's body is immutable once a run used it.
                text.replace("trace: on_failure", "trace: off").replace(
                    f"\nname: {name}\n", f"\nname: {name}-trace-off\n"
                ),
                source=f"{name} (bench: trace off)",
                max_selector_length=self.settings.max_selector_length,
                max_repeat=self.settings.max_repeat,
            )
        return self._untraced[name]

    def iterate(self, trace_off: bool = False) -> tuple[list[dict[str, Any]], str]:
        before = self.meter.snapshot() + self.driver.snapshot()
        contexts0 = self.runtime.pool.contexts_created
        outcomes = {}
        for name, params in self._params().items():
            if trace_off:
                outcomes[name] = self.runtime.run_loaded(self._untraced_template(name), params)
            else:
                outcomes[name] = self.runtime.run_local(name, params)
        self._wait_for_spares()
        used = self.meter.snapshot() + self.driver.snapshot()
        used.subtract(before)
        for run in outcomes.values():
            if run.status != "completed":
                raise AssertionError(
                    f"browserq run {run.run_id} {run.status}: {run.error_code} {run.error_message}"
                )
        self.store_use[trace_off].append(used)
        if not trace_off:
            self.last_run_ids = {name: run.run_id for name, run in outcomes.items()}
            self.contexts.append(self.runtime.pool.contexts_created - contexts0)
        quotes_run, form_run = outcomes["quotes"], outcomes["login_form"]
        if quotes_run.outputs.get("last_page_quotes") != 10:
            raise AssertionError(
                f"quotes run: last page had {quotes_run.outputs.get('last_page_quotes')} quotes"
            )
        return quotes_run.outputs["quotes"], form_run.outputs["confirmation"]

    def _wait_for_spares(self) -> None:
        wait_for_spares(self.runtime)

    def reset_counters(self) -> None:
        for values in self.store_use.values():
            values.clear()
        self.contexts.clear()

    def per_run_rows(self) -> dict[str, dict[str, int]]:
        """Step rows and artifacts of the last iteration's runs (read after the timed loop)."""
        store = self.runtime.store
        return {
            kind: {"step_rows": len(store.steps.steps(run_id)), "artifacts": len(store.steps.artifacts(run_id))}
            for kind, run_id in self.last_run_ids.items()
        }


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
    p90 = (
        statistics.quantiles(ordered, n=10, method="inclusive")[-1]
        if len(ordered) > 1
        else ordered[0]
    )
    return {
        "median_ms": round(statistics.median(ordered), 1),
        "p90_ms": round(p90, 1),
        "min_ms": round(ordered[0], 1),
        "max_ms": round(ordered[-1], 1),
        "samples_ms": [round(s, 1) for s in samples_ms],
    }


def store_summary(per_iteration: list[Counter[str]]) -> dict[str, Any]:
    """Medians over the iterations of what the store did (see StoreMeter)."""

    def med(key: str, scale: float = 1.0) -> float:
        return round(statistics.median(c[key] for c in per_iteration) * scale, 1)

    methods = sorted({k for c in per_iteration for k in c if k.startswith("call:")})
    driver_methods = sorted({k for c in per_iteration for k in c if k.startswith("driver:")})
    return {
        "checkpoints": med("checkpoints"),
        "driver_messages": med("driver"),
        "driver_messages_by_method": {k[7:]: med(k) for k in driver_methods},
        "calls": med("calls"),
        "calls_by_method": {k[5:]: med(k) for k in methods},
        "ms_in_store_calls": med("store_s", 1000),
        "sql_statements": med("sql"),
        "sql_writes": med("sql_write"),
        "ms_executing_sql": med("sql_s", 1000),
        "commits": med("commits"),
    }


def check(way: str, quotes: list[dict[str, Any]], confirmation: str) -> None:
    if len(quotes) != QUOTES_TOTAL:
        raise AssertionError(f"{way}: {len(quotes)} quotes, expected {QUOTES_TOTAL}")
    if not confirmation.startswith(CONFIRMATION_PREFIX):
        raise AssertionError(f"{way}: unexpected confirmation {confirmation!r}")


def browserq_revision() -> str | None:
    """``git describe`` of the checkout measured, ``-dirty`` when it has local changes.

    Outside a git checkout (an exported tree) ``BROWSERQ_BENCH_REVISION`` is reported instead.
    """
    if os.environ.get("BROWSERQ_BENCH_REVISION"):
        return os.environ["BROWSERQ_BENCH_REVISION"]
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def chromium_version(executable: str | None) -> str | None:
    if not executable:
        return None
    try:
        out = subprocess.run(
            [executable, "--version"], check=False, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


LABELS = {
    "playwright": "(a) hand-written Playwright",
    "browserq": "(b) browserq run_local",
    "browserq_trace_off": "(c) browserq, trace: off",
}


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="browserq-bench-") as tmp_name:
        tmp = Path(tmp_name)
        with DemoSite() as site, database(args.db, tmp) as db_url:
            settings = load_settings(
                database_url=db_url,
                templates_dir=TEMPLATES,
                artifacts_dir=tmp / "artifacts",
                log_level="WARNING",  # no per-run INFO line on stderr
                **args.overrides,
            )
            configure_logging(settings)
            loop = asyncio.Runner()  # (a) lives on this thread's loop; browserq has its own thread
            hand = HandWritten(settings, site.url, tmp / "handwritten", tuned=args.tuned_raw)
            bq = ViaBrowserq(settings, site.url)
            try:
                loop.run(hand.start())
                bq.start()
                ways: dict[str, Callable[[], tuple[list[dict[str, Any]], str]]] = {
                    "playwright": lambda: loop.run(hand.iterate()),
                    "browserq": bq.iterate,
                }
                if args.trace_off:
                    ways["browserq_trace_off"] = lambda: bq.iterate(trace_off=True)

                # Warm-up (not counted); also checks that the ways scrape the very same records.
                warm = {name: fn() for name, fn in ways.items()}
                for name, (quotes, confirmation) in warm.items():
                    check(name, quotes, confirmation)
                    if quotes != warm["playwright"][0]:
                        raise AssertionError(f"{name} scraped other quote records than playwright")
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
                if len(site.submissions) - submissions_before != len(ways) * args.iterations:
                    raise AssertionError(
                        "the demo site did not get one form post per way and iteration"
                    )
                rows = bq.per_run_rows()
                version = hand.browser.version if hand.browser else None
            finally:
                bq.stop()
                loop.run(hand.stop())
                loop.close()

    stats = {name: summary(values) for name, values in samples.items()}
    a, b = stats["playwright"], stats["browserq"]
    overhead: dict[str, Any] = {
        "median_extra_ms": round(b["median_ms"] - a["median_ms"], 1),
        "runs_per_iteration": 2,
        "browser_contexts_per_iteration": {
            "playwright": 1,
            "browserq": statistics.median(bq.contexts),
        },
        "per_run": rows,
        "step_rows_per_iteration": sum(r["step_rows"] for r in rows.values()),
        "store": store_summary(bq.store_use[False]),
    }
    if args.trace_off:
        c = stats["browserq_trace_off"]
        overhead["trace_on_failure_ms_median"] = round(b["median_ms"] - c["median_ms"], 1)
        overhead["store_trace_off"] = store_summary(bq.store_use[True])
    result: dict[str, Any] = {
        "benchmark": "scrape_and_form",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "iterations": args.iterations,
        "tuned_raw": args.tuned_raw,
        "browserq_revision": browserq_revision(),
        "settings_overrides": args.overrides,
        "database": mask_url(args.db) if args.db else "sqlite (temporary file)",
        "dialect": normalize_url(db_url).get_backend_name(),
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "playwright": metadata.version("playwright"),
            "chromium": chromium_version(settings.resolve_chromium()) or version,
        },
        **stats,
        "ratio_median_b_over_a": round(b["median_ms"] / a["median_ms"], 3),
        "browserq_overhead": overhead,
    }
    if args.trace_off:
        result["ratio_median_c_over_a"] = round(
            stats["browserq_trace_off"]["median_ms"] / a["median_ms"], 3
        )
    return result


def print_table(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    m = result["machine"]
    table = Table(
        title=f"5 quote pages + login/contact form, {result['iterations']} iterations, "
        f"store: {result['dialect']} (ms per iteration)"
        + "".join(f", {k}={v}" for k, v in result["settings_overrides"].items())
    )
    table.add_column("way")
    for col in ("median", "p90", "min", "max"):
        table.add_column(col, justify="right")
    for way, label in LABELS.items():
        if way in result:
            s = result[way]
            table.add_row(
                label, *(f"{s[k]:.1f}" for k in ("median_ms", "p90_ms", "min_ms", "max_ms"))
            )
    console.print(table)

    o = result["browserq_overhead"]
    detail = Table(title="browserq overhead (one iteration = 2 runs)", show_header=False)
    detail.add_column("what")
    detail.add_column("value", justify="right")
    detail.add_row("extra wall time vs (a), median", f"{o['median_extra_ms']:.1f} ms")
    if "trace_on_failure_ms_median" in o:
        detail.add_row(
            "of which trace: on_failure (b - c), median",
            f"{o['trace_on_failure_ms_median']:.1f} ms",
        )
    st = o["store"]
    detail.add_row(
        "time inside Store calls (SQL execution)",
        f"{st['ms_in_store_calls']:.1f} ms ({st['ms_executing_sql']:.1f} ms)",
    )
    detail.add_row("Store calls / commits", f"{st['calls']:g} / {st['commits']:g}")
    detail.add_row("checkpoints written", f"{st['checkpoints']:g}")
    by = st["driver_messages_by_method"]
    detail.add_row(
        "driver messages (storageState / cookies / evaluateExpression)",
        f"{st['driver_messages']:g} ({by.get('storageState', 0):g} / {by.get('cookies', 0):g} / "
        f"{by.get('evaluateExpression', 0):g})",
    )
    detail.add_row(
        "SQL statements (INSERT/UPDATE/DELETE)", f"{st['sql_statements']:g} ({st['sql_writes']:g})"
    )
    contexts = o["browser_contexts_per_iteration"]
    detail.add_row(
        "browser contexts: (a) / (b)", f"{contexts['playwright']:g} / {contexts['browserq']:g}"
    )
    for kind, r in o["per_run"].items():
        detail.add_row(f"{kind} run: step rows, artifacts", f"{r['step_rows']}, {r['artifacts']}")
    console.print(detail)
    console.print(
        f"[dim]{m['chromium']} · playwright {m['playwright']} · python {m['python']} · "
        f"{m['cpus']} CPUs (load {m['load_average_1m_at_end']}) · {result['database']}"
        + (f" · browserq {result['browserq_revision']}" if result["browserq_revision"] else "")
        + "[/dim]",
        highlight=False,
    )
    if "ratio_median_c_over_a" in result:
        print(f"ratio c/a (median): {result['ratio_median_c_over_a']:.2f}")
    print(f"ratio b/a (median): {result['ratio_median_b_over_a']:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--iterations", type=int, default=15, help="measured iterations per way (default 15)"
    )
    parser.add_argument(
        "--db",
        default=None,
        help="SQLAlchemy URL of the store; a PostgreSQL URL gets a scratch database on that "
        "server, dropped afterwards (default: SQLite in a temporary directory)",
    )
    parser.add_argument(
        "--trace-off",
        action="store_true",
        help="also run (c): browserq with the templates edited to trace: off, to price the tracing",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a browserq setting (repeatable; VALUE is YAML), e.g. --set stealth=false",
    )
    parser.add_argument(
        "--tuned-raw", action="store_true",
        help="launch (a)'s Chromium with browserq's throughput flags too (browsers/flags.py), so b/a "
             "is browserq's own work only",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    args = parser.parse_args(argv)
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")
    args.overrides = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            parser.error(f"--set expects KEY=VALUE, got {item!r}")
        args.overrides[key.strip()] = yaml.safe_load(value)
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
