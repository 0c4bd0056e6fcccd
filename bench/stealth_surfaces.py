"""Benchmark: what an offline automation detector sees, without and with ``browserq.stealth``.

One process, one detector page on 127.0.0.1 (``tests/stealth/detector.py``: the checks of
infosimples/detect-headless, Intoli's test, rebrowser-bot-detector and CreepJS-style page vs
iframe/worker/header comparisons), three configurations:

(a) ``before``: Chromium launched as browserq launches it (``settings.chromium_launch_args()``),
    a context with browserq's ``DEFAULT_CONTEXT_OPTIONS``.
(b) ``after``: the same plus ``stealth.launch_args(pool identity)`` and
    ``ignore_default_args``; ``probe_host`` once; a host-coherent identity
    (``Fingerprint.generate(seed, host=host, region=...)``), ``context_options`` + ``apply`` +
    ``new_page``.
(c) ``after_windows`` (unless ``--no-windows``): the browser of (b) with an identity that claims
    Windows — what a non-host platform costs.

    .venv/bin/python bench/stealth_surfaces.py [--seed visitor-1] [--region de] [--json]

Prints ``failed checks: before N/M, after K/M`` and a table of every check. Checks listed in
``CDP_TELLS`` cannot pass with the shipped Playwright driver (see browserq/stealth/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from playwright.async_api import Playwright  # noqa: E402

from browserq import stealth  # noqa: E402
from browserq.browsers.api import async_playwright  # noqa: E402
from browserq.browsers.pool import DEFAULT_CONTEXT_OPTIONS  # noqa: E402
from browserq.settings import load_settings  # noqa: E402
from tests.stealth.detector import CDP_TELLS, DetectorServer, evaluate_checks, run_detector  # noqa: E402


async def _launch(pw: Playwright, extra: list[str], ignore: list[str]) -> Any:
    settings = load_settings()
    return await pw.chromium.launch(
        executable_path=settings.resolve_chromium(),
        headless=settings.headless,
        args=[*settings.chromium_launch_args(), *extra],
        ignore_default_args=ignore or None,
        chromium_sandbox=settings.chromium_sandbox,
    )


async def measure(seed: str, region: str | None, windows: bool) -> dict[str, Any]:
    settings = load_settings()
    executable = settings.resolve_chromium()
    version = stealth.chrome_version_of(executable) if executable else None
    out: dict[str, Any] = {"seed": seed, "region": region, "runs": {}}
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
            browser = await _launch(pw, stealth.launch_args(pool), stealth.ignore_default_args())
            host = await stealth.probe_host(browser)
            identities = {
                "after": stealth.Fingerprint.generate(
                    seed, chrome_version=host.chrome_version, region=region, host=host
                )
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
        f"Chromium {result['chrome_version']}, seed {result['seed']!r}, region {result['region'] or 'us'}"
    ]
    summary = ", ".join(f"{n.replace('_', ' ')} {len(failed[n])}/{total}" for n in names)
    lines.append(f"failed checks: {summary}")
    lines.append(f"  (of which CDP tells no configuration can pass: {', '.join(CDP_TELLS)})")
    width = max(len(c) for c in checks)
    lines.append("")
    lines.append(f"{'check':<{width}}  " + "  ".join(f"{n:<13}" for n in names))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", default="visitor-1")
    parser.add_argument("--region", default=None, help="proxy region hint, e.g. de (default: us)")
    parser.add_argument(
        "--no-windows", action="store_true", help="skip the Windows-identity column"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = parser.parse_args()
    result = asyncio.run(measure(args.seed, args.region, not args.no_windows))
    if args.json:
        runs = result["runs"]
        total = len(runs["before"][0])
        print(
            json.dumps(
                {
                    **{k: v for k, v in result.items() if k != "runs"},
                    "total_checks": total,
                    "failed": {
                        n: sorted(c for c, ok in r[0].items() if not ok) for n, r in runs.items()
                    },
                    "checks": {n: r[0] for n, r in runs.items()},
                    "why": {n: r[1] for n, r in runs.items()},
                    "cdp_tells": list(CDP_TELLS),
                },
                indent=2,
            )
        )
    else:
        print(render(result))


if __name__ == "__main__":
    main()
