"""Benchmark: what an offline automation detector sees, without and with ``browserq.stealth``.

One process, one detector page on 127.0.0.1 (``tests/stealth/detector.py``: the checks of
infosimples/detect-headless, Intoli's test, rebrowser-bot-detector and CreepJS-style page vs
iframe/worker/header comparisons), three configurations:

(a) ``before``: Chromium launched as browserq launches it (``settings.chromium_launch_args()``),
    a context with browserq's ``DEFAULT_CONTEXT_OPTIONS``.
(b) ``after``: the same plus ``stealth.launch_args(pool identity)`` and
    ``ignore_default_args``; ``probe_host`` once; the identity a worker gives a run that names
    none (``Fingerprint.generate(<random seed>, host=host, region=...)``, as the pool does),
    ``context_options`` + ``apply`` + ``new_page``.
(c) ``named:<seed>``, one per ``--identity`` (default ``alice`` and ``bob``): the browser of (b)
    with a named identity (``run_template.delay(..., identity="alice")``).
(d) ``after_windows`` (with ``--windows``): an identity that claims Windows on this Linux browser
    — what a non-host platform costs.

The driver and the mode are the process's: ``BROWSERQ_DRIVER`` (playwright, rebrowser, patchright)
and ``BROWSERQ_HEADLESS`` (false: headful, on ``$DISPLAY`` or an Xvfb browserq starts).
``--matrix`` runs this script once per installed driver and mode, in subprocesses, and prints
how many checks fail in each.

    .venv/bin/python bench/stealth_surfaces.py [--identity alice --identity bob] [--region de] [--windows] [--json]
    .venv/bin/python bench/stealth_surfaces.py --matrix

Prints ``failed checks: before N/M, after K/M, ...`` and a table of every check. ``CDP_TELLS``
are the driver's own tells (see browserq/stealth/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from playwright.async_api import Playwright  # noqa: E402

from browserq import engines, stealth  # noqa: E402
from browserq.browsers import api  # noqa: E402
from browserq.browsers.api import async_playwright  # noqa: E402
from browserq.browsers.display import display_for_headful  # noqa: E402
from browserq.browsers.pool import DEFAULT_CONTEXT_OPTIONS  # noqa: E402
from browserq.drivers import DRIVERS, check_installed  # noqa: E402
from browserq.settings import load_settings  # noqa: E402
from tests.stealth.detector import CDP_TELLS, DetectorServer, evaluate_checks, run_detector  # noqa: E402


async def _launch(pw: Playwright, extra: list[str], ignore: list[str]) -> Any:
    settings = load_settings()
    display = None if settings.headless else display_for_headful()
    return await pw.chromium.launch(
        executable_path=(executable := settings.resolve_chromium()),
        **engines.launch_options(settings.browser, executable),
        headless=settings.headless,
        args=[*settings.chromium_launch_args(), *extra],
        ignore_default_args=ignore or None,
        chromium_sandbox=settings.chromium_sandbox,
        env={**os.environ, "DISPLAY": display} if display else None,
    )


async def measure(names: list[str], region: str | None, windows: bool) -> dict[str, Any]:
    settings = load_settings()
    executable = settings.resolve_chromium()
    version = stealth.chrome_version_of(executable) if executable else None
    seed = uuid.uuid4().hex  # what the pool gives a run without a named identity
    out: dict[str, Any] = {"seed": seed, "region": region, "runs": {}, "driver": api.NAME,
                           "engine": settings.browser, "executable": executable,
                           "mode": "headless" if settings.headless else "headful"}
    with DetectorServer() as server:
        async with async_playwright() as pw:
            browser = await _launch(pw, [], [])
            out["chrome_version"] = browser.version
            context = await browser.new_context(**DEFAULT_CONTEXT_OPTIONS)
            run = await run_detector(context, server)
            await context.close()
            await browser.close()
            out["runs"]["before"] = evaluate_checks(run)

            pool = stealth.Fingerprint.generate(
                "pool", chrome_version=version or out["chrome_version"], region=region
            )
            browser = await _launch(
                pw, stealth.launch_args(pool, headless=settings.headless), stealth.ignore_default_args()
            )
            host = await stealth.probe_host(browser)
            identities = {
                name: stealth.Fingerprint.generate(
                    identity, chrome_version=host.chrome_version, region=region, host=host
                )
                for name, identity in [("after", seed), *((f"named:{n}", n) for n in names)]
            }
            if windows:
                identities["after_windows"] = stealth.Fingerprint.generate(
                    seed,
                    chrome_version=host.chrome_version,
                    region=region,
                    host=host,
                    platform="windows",
                )
            for name, fp in identities.items():
                context = await browser.new_context(**stealth.context_options(fp))
                await stealth.apply(context, fp, host=host)
                run = await run_detector(context, server, open_page=stealth.new_page)
                await context.close()
                out["runs"][name] = evaluate_checks(run)
                out.setdefault("identities", {})[name] = fp.to_dict()
            await browser.close()
    return out


def render(result: dict[str, Any]) -> str:
    runs = result["runs"]
    names = list(runs)
    checks = list(runs["before"][0])
    total = len(checks)
    failed = {n: [c for c in checks if not runs[n][0].get(c)] for n in names}
    lines = [
        f"Chromium {result['chrome_version']} ({result.get('engine', 'chromium')}), driver {result['driver']}, {result['mode']}, "
        f"default identity seed {result['seed'][:8]}…, region {result['region'] or 'us'}"
    ]
    summary = ", ".join(f"{n.replace('_', ' ')} {len(failed[n])}/{total}" for n in names)
    lines.append(f"failed checks: {summary}")
    lines.append(f"  (the driver's own tells: {', '.join(CDP_TELLS)})")
    width = max(len(c) for c in checks)
    lines.append("")
    lines.append(f"{'check':<{width}}  " + "  ".join(f"{n[:13]:<13}" for n in names))
    for c in checks:
        cells = "  ".join(f"{('pass' if runs[n][0][c] else 'FAIL'):<13}" for n in names)
        lines.append(f"{c:<{width}}  {cells}")
    for n in names[1:]:
        if failed[n]:
            lines.append("")
            lines.append(f"why {n} fails:")
            for c in failed[n]:
                lines.append(f"  {c}: {runs[n][1].get(c, '')[:220]}")
    return "\n".join(lines)


def as_json(result: dict[str, Any]) -> dict[str, Any]:
    runs = result["runs"]
    return {
        **{k: v for k, v in result.items() if k != "runs"},
        "total_checks": len(runs["before"][0]),
        "failed": {n: sorted(c for c, ok in r[0].items() if not ok) for n, r in runs.items()},
        "checks": {n: r[0] for n, r in runs.items()},
        "why": {n: r[1] for n, r in runs.items()},
        "cdp_tells": list(CDP_TELLS),
    }


def matrix(extra: list[str]) -> str:
    """This script per installed driver and mode (subprocesses): failed checks per column."""
    rows = []
    for driver in DRIVERS:
        try:
            check_installed(driver)
        except Exception as exc:
            rows.append(f"{driver:<11} skipped: {exc}")
            continue
        for mode in ("headless", "headful"):
            env = {**os.environ, "BROWSERQ_DRIVER": driver, "BROWSERQ_HEADLESS": str(mode == "headless").lower()}
            env.pop("DISPLAY", None) if mode == "headful" else None
            done = subprocess.run([sys.executable, __file__, "--json", *extra], env=env,
                                  capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                rows.append(f"{driver:<11} {mode:<9} failed to run: {done.stderr.strip().splitlines()[-1:]}")
                continue
            data = json.loads(done.stdout)
            cells = "  ".join(f"{name} {len(failed)}/{data['total_checks']}" for name, failed in data["failed"].items())
            rows.append(f"{driver:<11} {mode:<9} {cells}")
            for name, failed in data["failed"].items():
                if name not in ("before", "after_windows") and failed:
                    rows.append(f"{'':<21} {name} fails: {', '.join(failed)}")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--identity", action="append", help="a named identity (repeat); default alice and bob")
    parser.add_argument("--region", default=None, help="proxy region hint, e.g. de (default: us)")
    parser.add_argument("--windows", action="store_true", help="add a Windows-identity column")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--matrix", action="store_true", help="every installed driver x headless/headful")
    args = parser.parse_args()
    if args.matrix:
        extra = [a for n in (args.identity or []) for a in ("--identity", n)]
        extra += ["--region", args.region] if args.region else []
        print(matrix(extra + (["--windows"] if args.windows else [])))
        return
    result = asyncio.run(measure(args.identity or ["alice", "bob"], args.region, args.windows))
    print(json.dumps(as_json(result), indent=2) if args.json else render(result))


if __name__ == "__main__":
    main()
