"""Benchmark: three Python drivers for the same Chromium — ``playwright``, ``patchright``,
``rebrowser-playwright`` — under browserq's stealth, side by side.

Per driver (all in one process, each driver with its own Node driver process):

1. the offline detector (``tests/stealth/detector.py``) on configuration (b) ``after`` of
   ``bench/stealth_surfaces.py``: launched with ``settings.chromium_launch_args()`` +
   ``stealth.launch_args(pool identity)`` + ``ignore_default_args``, ``probe_host``, a
   host-coherent identity, ``context_options`` + ``apply`` + ``stealth.new_page`` — the same
   functions, only the driver's ``async_playwright`` swapped in;
2. tracing: ``context.tracing.start(screenshots=True, snapshots=True)``, one navigation,
   ``tracing.stop(path=...)`` → a non-empty zip with a ``trace.trace`` member?
3. ``page.evaluate("() => new Error().stack")``: does it show ``UtilityScript`` /
   ``eval at evaluate`` frames?
4. a small workload, ``--rounds`` (default 10) × (new context, new page, goto a local page,
   click a button, read the text, close the context), interleaved A, B, C, A, B, C, … on one
   plain (non-stealth) browser per driver; median / min / max ms.

Browsers are never downloaded: every launch uses ``--executable`` (default /usr/bin/chromium).
The project venv has all three (the ``dev`` extra; ``browserq[rebrowser]`` / ``browserq[patchright]``
elsewhere). The detector counts per driver *and mode* come from ``bench/stealth_surfaces.py
--matrix``; this script adds what a detector does not see (tracing, stacks, speed):

    .venv/bin/python bench/drivers.py [playwright patchright rebrowser] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.metadata
import json
import statistics
import sys
import tempfile
import threading
import time
import traceback
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from browserq import stealth  # noqa: E402
from browserq.browsers.pool import DEFAULT_CONTEXT_OPTIONS  # noqa: E402
from browserq.settings import load_settings  # noqa: E402
from tests.stealth.detector import CDP_TELLS, DetectorServer, evaluate_checks, run_detector  # noqa: E402

#: short name -> (import module, distribution name)
DRIVERS: dict[str, tuple[str, str]] = {
    "playwright": ("playwright.async_api", "playwright"),
    "patchright": ("patchright.async_api", "patchright"),
    "rebrowser": ("rebrowser_playwright.async_api", "rebrowser-playwright"),
}

#: The flags the comparison always passes (on top of browserq's own launch args).
REQUIRED_ARGS = (
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)

WORK_HTML = """<!doctype html><html><head><title>work</title></head><body>
<button id="go" onclick="document.getElementById('out').textContent = 'clicked ' + (++window.n)">go</button>
<p id="out">idle</p><script>window.n = 0;</script>
</body></html>"""


class WorkSite:
    """A one-page site on 127.0.0.1: a button that writes into ``#out``."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                data = WORK_HTML.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> WorkSite:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _launch_args(executable: str) -> tuple[Any, list[str]]:
    settings = load_settings(chromium_path=executable)
    args = [*REQUIRED_ARGS]
    args += [a for a in settings.chromium_launch_args() if a not in args]
    return settings, args


async def _launch(pw: Any, executable: str, extra: list[str], ignore: list[str]) -> Any:
    settings, args = _launch_args(executable)
    return await pw.chromium.launch(
        executable_path=executable,
        headless=settings.headless,
        args=[*args, *extra],
        ignore_default_args=ignore or None,
        chromium_sandbox=False,
    )


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"


async def detector_after(
    pw: Any, executable: str, server: DetectorServer, seed: str
) -> dict[str, Any]:
    """Configuration (b) ``after`` of bench/stealth_surfaces.py, through ``pw``."""
    version = stealth.chrome_version_of(executable)
    pool = stealth.Fingerprint.generate("pool", chrome_version=version, region=None)
    browser = await _launch(
        pw, executable, stealth.launch_args(pool), stealth.ignore_default_args()
    )
    try:
        host = await stealth.probe_host(browser)
        fp = stealth.Fingerprint.generate(
            seed, chrome_version=host.chrome_version, region=None, host=host
        )
        context = await browser.new_context(**stealth.context_options(fp))
        await stealth.apply(context, fp, host=host)
        run = await run_detector(context, server, open_page=stealth.new_page)
        await context.close()
        checks, why = evaluate_checks(run)
        return {"chrome_version": browser.version, "checks": checks, "why": why}
    finally:
        await browser.close()


async def detector_before(pw: Any, executable: str, server: DetectorServer) -> dict[str, Any]:
    """Configuration (a) ``before``: browserq's launch args, ``DEFAULT_CONTEXT_OPTIONS``, no stealth."""
    browser = await _launch(pw, executable, [], [])
    try:
        context = await browser.new_context(**DEFAULT_CONTEXT_OPTIONS)
        run = await run_detector(context, server)
        await context.close()
        checks, why = evaluate_checks(run)
        return {"chrome_version": browser.version, "checks": checks, "why": why}
    finally:
        await browser.close()


async def tracing_and_stack(
    pw: Any, browser: Any, site: WorkSite, tmp: Path, name: str
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    context = await browser.new_context(**DEFAULT_CONTEXT_OPTIONS)
    try:
        path = tmp / f"trace-{name}.zip"
        try:
            await context.tracing.start(screenshots=True, snapshots=True)
            page = await context.new_page()
            await page.goto(site.url)
            await page.locator("#go").click()
            await context.tracing.stop(path=str(path))
            size = path.stat().st_size if path.exists() else 0
            members: list[str] = []
            if size:
                with zipfile.ZipFile(path) as z:
                    members = z.namelist()
            ok = size > 0 and "trace.trace" in members
            out["tracing"] = {
                "ok": ok,
                "bytes": size,
                "members": len(members),
                "screenshots": sum(1 for m in members if m.endswith((".jpeg", ".png"))),
            }
        except Exception as exc:  # a bench reports, it does not stop
            out["tracing"] = {"ok": False, "error": _short(exc)}
        try:
            page = await context.new_page()
            await page.goto(site.url)
            stack = await page.evaluate("() => new Error().stack")
            frames = [
                marker
                for marker in ("UtilityScript", "eval at evaluate")
                if marker in (stack or "")
            ]
            out["evaluate_stack"] = {"automation_frames": frames, "stack": stack}
        except Exception as exc:
            out["evaluate_stack"] = {"automation_frames": None, "error": _short(exc)}
    finally:
        await context.close()
    return out


async def one_round(browser: Any, site: WorkSite) -> float:
    started = time.perf_counter()
    context = await browser.new_context(**DEFAULT_CONTEXT_OPTIONS)
    page = await context.new_page()
    await page.goto(site.url)
    await page.locator("#go").click()
    text = await page.locator("#out").text_content()
    await context.close()
    elapsed = (time.perf_counter() - started) * 1000
    if text != "clicked 1":
        raise AssertionError(f"unexpected text {text!r}")
    return elapsed


async def measure(
    names: list[str], executable: str, seed: str, rounds: int, before: bool = True
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "executable": executable,
        "seed": seed,
        "rounds": rounds,
        "drivers": {},
    }
    managers: dict[str, Any] = {}
    pws: dict[str, Any] = {}
    for name in names:
        module, dist = DRIVERS[name]
        entry: dict[str, Any] = {"module": module}
        result["drivers"][name] = entry
        try:
            entry["version"] = importlib.metadata.version(dist)
            mod = importlib.import_module(module)
            managers[name] = mod.async_playwright()
            pws[name] = await managers[name].__aenter__()
        except Exception as exc:
            entry["error"] = f"driver did not start: {_short(exc)}"
    live = [n for n in names if n in pws]

    with DetectorServer() as server, WorkSite() as site, tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        # 1. the detector, one driver after the other (the server is shared and reset per run)
        for name in live:
            entry = result["drivers"][name]
            started = time.monotonic()
            try:
                entry["detector"] = await detector_after(pws[name], executable, server, seed)
            except Exception as exc:
                entry["detector"] = {"error": _short(exc), "trace": traceback.format_exc()[-1500:]}
            entry["detector_seconds"] = round(time.monotonic() - started, 1)
            if before:
                try:
                    entry["detector_before"] = await detector_before(pws[name], executable, server)
                except Exception as exc:
                    entry["detector_before"] = {"error": _short(exc)}

        # 2.-4. one plain browser per driver
        browsers: dict[str, Any] = {}
        for name in live:
            entry = result["drivers"][name]
            try:
                browsers[name] = await _launch(pws[name], executable, [], [])
                entry.update(await tracing_and_stack(pws[name], browsers[name], site, tmp, name))
                await one_round(browsers[name], site)  # warm-up, not counted
            except Exception as exc:
                entry["workload_error"] = _short(exc)
                browsers.pop(name, None)
        times: dict[str, list[float]] = {n: [] for n in browsers}
        for _ in range(rounds):
            for name in list(times):
                try:
                    times[name].append(await one_round(browsers[name], site))
                except Exception as exc:
                    result["drivers"][name]["workload_error"] = _short(exc)
                    times.pop(name)
        for name, ts in times.items():
            if ts:
                result["drivers"][name]["workload_ms"] = {
                    "median": round(statistics.median(ts), 1),
                    "min": round(min(ts), 1),
                    "max": round(max(ts), 1),
                    "n": len(ts),
                }
        for browser in browsers.values():
            await browser.close()
    for name in live:
        with contextlib.suppress(Exception):
            await managers[name].__aexit__(None, None, None)
    return result


def _minmax(ms: dict[str, Any] | None) -> str:
    return f"{ms['min']}-{ms['max']}" if ms else "n/a"


def render(result: dict[str, Any]) -> str:
    drivers = result["drivers"]
    names = list(drivers)
    ok = {n: d for n, d in drivers.items() if "checks" in d.get("detector", {})}
    checks: list[str] = []
    for d in ok.values():
        checks += [c for c in d["detector"]["checks"] if c not in checks]
    total = len(checks)
    failed = {n: [c for c in checks if not d["detector"]["checks"].get(c)] for n, d in ok.items()}

    def cell(n: str) -> str:
        if n not in ok:
            return "n/a"
        return f"{len(failed[n])}/{total}"

    w = 16
    L = 48
    lines = [
        f"Chromium {next((d['detector']['chrome_version'] for d in ok.values()), '?')} ({result['executable']}), seed {result['seed']!r}"
    ]
    lines.append("")
    lines.append(f"{'':<{L}}" + "".join(f"{n:<{w}}" for n in names))
    lines.append(
        f"{'version':<{L}}" + "".join(f"{drivers[n].get('version', '?'):<{w}}" for n in names)
    )
    lines.append(
        f"{'failed checks (b) after: stealth':<{L}}" + "".join(f"{cell(n):<{w}}" for n in names)
    )

    def before_cell(n: str) -> str:
        b = drivers[n].get("detector_before")
        if not b or "checks" not in b:
            return "n/a"
        return f"{sum(1 for v in b['checks'].values() if not v)}/{len(b['checks'])}"

    lines.append(
        f"{'failed checks (a) before: no stealth':<{L}}"
        + "".join(f"{before_cell(n):<{w}}" for n in names)
    )

    def yn(n: str, key: str) -> str:
        d = drivers[n].get(key)
        if d is None:
            return "n/a"
        if key == "tracing":
            return f"yes ({d['bytes'] // 1024} KiB)" if d.get("ok") else "NO"
        frames = d.get("automation_frames")
        return "error" if frames is None else ("yes" if frames else "no")

    lines.append(
        f"{'tracing zip (screenshots+snapshots)':<{L}}"
        + "".join(f"{yn(n, 'tracing'):<{w}}" for n in names)
    )
    lines.append(
        f"{'evaluate() stack has UtilityScript/eval frames':<{L}}"
        + "".join(f"{yn(n, 'evaluate_stack'):<{w}}" for n in names)
    )
    med = {n: drivers[n].get("workload_ms", {}).get("median") for n in names}
    lines.append(
        f"{'workload median ms (%d rounds)' % result['rounds']:<{L}}"
        + "".join(f"{(str(med[n]) if med[n] is not None else 'n/a'):<{w}}" for n in names)
    )
    mm = {n: drivers[n].get("workload_ms") for n in names}
    lines.append(f"{'workload min-max ms':<{L}}" + "".join(f"{_minmax(mm[n]):<{w}}" for n in names))
    lines.append("")
    any_failed = [c for c in checks if any(c in failed[n] for n in ok)]
    if any_failed:
        width = max(len(c) for c in any_failed) + 4
        lines.append("failed checks in (b) after (* = one of CDP_TELLS):")
        lines.append(f"{'check':<{width}}" + "".join(f"{n:<{w}}" for n in names))
        for c in any_failed:
            mark = " *" if c in CDP_TELLS else ""
            row = "".join(
                f"{('n/a' if n not in ok else ('FAIL' if c in failed[n] else 'pass')):<{w}}"
                for n in names
            )
            lines.append(f"{(c + mark):<{width}}{row}")
    for n in names:
        d = drivers[n]
        errs = [f"{k}: {d[k]}" for k in ("error", "workload_error") if k in d]
        if "error" in d.get("detector", {}):
            errs.append(f"detector: {d['detector']['error']}")
        for k in ("tracing", "evaluate_stack"):
            if isinstance(d.get(k), dict) and "error" in d[k]:
                errs.append(f"{k}: {d[k]['error']}")
        if errs:
            lines.append("")
            lines.append(f"{n} errors:")
            lines += [f"  {e}" for e in errs]
    lines.append("")
    for n in names:
        st = drivers[n].get("evaluate_stack", {}).get("stack")
        if st:
            lines.append(f"{n} evaluate stack: " + " | ".join(s.strip() for s in st.splitlines()))
    for n in names:
        b = drivers[n].get("detector_before", {})
        if "checks" in b:
            lines.append(
                f"(a) before, {n} fails: " + ", ".join(c for c, v in b["checks"].items() if not v)
            )
        elif "error" in b:
            lines.append(f"(a) before, {n}: {b['error']}")
    for n in ok:
        if failed[n]:
            lines.append("")
            lines.append(f"why {n} fails:")
            for c in failed[n]:
                lines.append(f"  {c}: {drivers[n]['detector']['why'].get(c, '')[:200]}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "drivers", nargs="*", help=f"any of {', '.join(DRIVERS)} (default: all that import)"
    )
    parser.add_argument("--executable", default="/usr/bin/chromium")
    parser.add_argument("--seed", default="visitor-1")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument(
        "--no-before", action="store_true", help="skip the detector run without stealth"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = parser.parse_args()
    names = args.drivers
    if not names:
        names = []
        for name, (module, _) in DRIVERS.items():
            try:
                importlib.import_module(module)
                names.append(name)
            except ImportError:
                print(f"skipping {name}: {module} does not import", file=sys.stderr)
    unknown = [n for n in names if n not in DRIVERS]
    if unknown:
        parser.error(f"unknown driver(s): {', '.join(unknown)}")
    started = time.monotonic()
    result = asyncio.run(
        measure(names, args.executable, args.seed, args.rounds, not args.no_before)
    )
    result["seconds"] = round(time.monotonic() - started, 1)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print(render(result))
        print(f"\n(total {result['seconds']} s)")


if __name__ == "__main__":
    main()
