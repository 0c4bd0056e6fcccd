"""The browser checks of ``browserq doctor`` (Chromium found, its version against the one
Playwright was built for, a headless launch), and the :class:`Check` every check returns.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from browserq.settings import Settings

#: A launch starts a driver and a browser: it may take this long.
LAUNCH_TIMEOUT_S = 60.0


@dataclass
class Check:
    """One check's outcome: ``ok``, ``warn`` (works, read ``fix``), ``fail`` or ``skip``."""

    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str = ""


@dataclass
class Findings:
    """What one check learns that a later one needs."""

    chromium: str | None = None  # the executable (None: Playwright's own build)
    chromium_ok: bool = True
    secret_templates: list[str] = field(default_factory=list)


def passed(name: str, detail: str) -> Check:
    return Check(name, "ok", detail)


def failed(name: str, detail: str, fix: str) -> Check:
    return Check(name, "fail", detail, fix)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


# --- Chromium ------------------------------------------------------------------------------------
def check_chromium(settings: Settings, found: Findings) -> Check:
    """Which engine runs (BROWSERQ_BROWSER), its binary and version, and its stealth tells."""
    from browserq import engines
    from browserq.errors import ConfigError
    from browserq.stealth.host import chrome_version_of

    engine = settings.browser
    explicit = settings.chromium_path if engine == engines.CHROMIUM else settings.headless_shell_path
    try:
        found.chromium = settings.resolve_chromium()
    except ConfigError as exc:
        found.chromium_ok = False
        setting = engines.PATH_SETTING[engine]
        return failed("chromium", str(exc), f"fix or unset {setting}" if explicit else engines.INSTALL_HINT[engine])
    source = engines.describe_source(engine, found.chromium, explicit)
    if found.chromium is None:
        what = "Chromium" if engine == engines.CHROMIUM else "headless shell"
        return _engine_check(settings, f"engine {engine}: no system {what}; {source} will be used "
                             f"(`playwright install {engines.PLAYWRIGHT_NAME[engine]}`)")
    version = chrome_version_of(found.chromium)
    if version is None:
        found.chromium_ok = False
        return failed("chromium", f"{found.chromium} does not run (`{found.chromium} --version` "
                     "says no version)", f"point {engines.PATH_SETTING[engine]} at a working binary")
    return _engine_check(settings, f"engine {engine}: {found.chromium} (Chromium {version}; {source})")


def _engine_check(settings: Settings, detail: str) -> Check:
    """The engine's line: its stealth tells added, a warning where stealth is on but cannot hide them."""
    from browserq import engines

    if not settings.stealth:
        return passed("chromium", f"{detail}; stealth off")
    tells = engines.STEALTH_TELLS[settings.browser]
    if settings.browser == engines.HEADLESS_SHELL:
        return Check("chromium", "warn", f"{detail}; stealth tells: {tells}",
                     "where sites look for automation use BROWSERQ_BROWSER=chromium (docs/browsers.md, Engines)")
    return passed("chromium", f"{detail}; stealth tells: {tells}")


def playwright_chromium() -> tuple[str, str]:
    """The installed Playwright's version and the Chromium version it was built for (its
    ``driver/package/browsers.json``)."""
    import playwright

    listed = Path(playwright.__file__).parent / "driver" / "package" / "browsers.json"
    browsers = json.loads(listed.read_text())["browsers"]
    chromium = next(b for b in browsers if b["name"] == "chromium")
    return metadata.version("playwright"), str(chromium["browserVersion"])


def check_chromium_version(settings: Settings, found: Findings) -> Check:
    from browserq.stealth.host import chrome_version_of

    name = "chromium version"
    if not found.chromium_ok:
        return Check(name, "skip", "no Chromium to compare")
    playwright_version, expected = playwright_chromium()
    if found.chromium is None:
        return passed(name, f"Playwright {playwright_version}'s own build (Chromium {expected})")
    version = chrome_version_of(found.chromium) or "?"
    have, want = version.split(".")[0], expected.split(".")[0]
    if have == want:
        return passed(name, f"Chromium {version}; Playwright {playwright_version} expects {expected}")
    return Check(
        name, "warn",
        f"Chromium {have} at {found.chromium}, but Playwright {playwright_version} is built for "
        f"Chromium {want}: Playwright drives other majors over CDP and a few apart usually work, "
        "though a protocol change can break a feature",
        f"for an exact match set {_path_setting(settings)} to a {settings.browser} {want} (e.g. the one "
        f"`playwright install {_playwright_name(settings)}` downloads) or upgrade the system package",
    )


def _path_setting(settings: Settings) -> str:
    from browserq.engines import PATH_SETTING

    return PATH_SETTING[settings.browser]


def _playwright_name(settings: Settings) -> str:
    from browserq.engines import PLAYWRIGHT_NAME

    return PLAYWRIGHT_NAME[settings.browser]


async def _launch(settings: Settings) -> str:
    """Launch as a worker does, open about:blank, close everything; the browser's version."""
    from browserq.browsers.driver import start_driver, stop_driver
    from browserq.browsers.launcher import launch_chromium

    playwright = await start_driver()
    try:
        browser, _marker = await launch_chromium(playwright, settings)
        try:
            page = await browser.new_page()
            await page.goto("about:blank")
            return browser.version
        finally:
            await browser.close()
    finally:
        await stop_driver(playwright)


def check_launch(settings: Settings, found: Findings) -> Check:
    name = "browser launch"
    if not found.chromium_ok:
        return Check(name, "skip", "no Chromium to launch")
    import os

    from browserq.drivers import driver_name

    mode = "headless" if settings.headless else "headed" if os.environ.get("DISPLAY") else "headed (Xvfb)"
    try:
        version = asyncio.run(asyncio.wait_for(_launch(settings), LAUNCH_TIMEOUT_S))
    except TimeoutError:
        return failed(name, f"no {mode} browser within {LAUNCH_TIMEOUT_S:.0f} s",
                     "run the binary by hand to see why it hangs (missing libraries, sandbox)")
    except Exception as exc:
        return failed(name, first_line(exc), "see the message; `browserq run` shows the same launch")
    engine = "Chromium" if settings.browser == "chromium" else "headless shell, Chromium"
    return passed(name, f"{mode} {engine} {version} opened about:blank (driver {driver_name(settings.driver)})")


__all__ = [
    "LAUNCH_TIMEOUT_S",
    "Check",
    "Findings",
    "check_chromium",
    "check_chromium_version",
    "check_launch",
    "failed",
    "first_line",
    "passed",
    "playwright_chromium",
]
