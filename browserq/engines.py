"""Which browser engine a worker launches (``BROWSERQ_BROWSER``) and where its binary is.

Two engines, both Chromium builds driven by Playwright's ``chromium`` API:

* ``chromium`` (the default): the full browser, in Chromium's new headless mode (or headful).
  The stealth layer (:mod:`browserq.stealth`) is made for it.
* ``headless-shell``: ``chrome-headless-shell``, the old headless mode as a separate, much smaller
  program (Debian's ``chromium-headless-shell`` package, or ``playwright install
  chromium-headless-shell``). Lighter and faster, headless only, and with tells that the
  stealth layer cannot hide (docs/browsers.md, "Engines").

Resolution, per engine: the explicit path setting (``BROWSERQ_CHROMIUM_PATH`` or
``BROWSERQ_HEADLESS_SHELL_PATH``), then the system package, then Playwright's own download
(:func:`resolve` returns None for it and :func:`launch_options` names the build Playwright must
pick). This module only reads the filesystem; the settings call it (as they call
:mod:`browserq.drivers`), so it imports nothing of browserq but the errors.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from browserq.errors import ConfigError

CHROMIUM = "chromium"
HEADLESS_SHELL = "headless-shell"
ENGINES: tuple[str, ...] = (CHROMIUM, HEADLESS_SHELL)

#: Where a system Chromium usually lives, tried in order when ``chromium_path`` is unset.
CHROMIUM_CANDIDATES: tuple[str, ...] = (
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
    "/usr/bin/google-chrome-stable",
    "/snap/bin/chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
)

#: Where a system headless shell lives. Debian's binary first: /usr/bin's is a ``sh`` wrapper that
#: does not ``exec``, so it would stay the parent of the browser process (and carry its flags).
HEADLESS_SHELL_CANDIDATES: tuple[str, ...] = (
    "/usr/lib/chromium/chromium-headless-shell",
    "/usr/bin/chromium-headless-shell",
    "/usr/bin/chrome-headless-shell",
)

#: Playwright's download of each engine: (registry directory prefix, executable inside it) on Linux.
_PLAYWRIGHT_BUILDS: dict[str, tuple[str, tuple[str, ...]]] = {
    CHROMIUM: ("chromium-", ("chrome-linux64", "chrome")),
    HEADLESS_SHELL: ("chromium_headless_shell-", ("chrome-headless-shell-linux64", "chrome-headless-shell")),
}

#: Each engine's name for ``playwright install``.
PLAYWRIGHT_NAME = {CHROMIUM: "chromium", HEADLESS_SHELL: "chromium-headless-shell"}

#: The setting that names each engine's binary explicitly.
PATH_SETTING = {CHROMIUM: "BROWSERQ_CHROMIUM_PATH", HEADLESS_SHELL: "BROWSERQ_HEADLESS_SHELL_PATH"}

#: What to install when an engine is nowhere to be found.
INSTALL_HINT = {
    CHROMIUM: "install Chromium (`apt-get install chromium`) or Playwright's build "
              "(`playwright install chromium`), or set BROWSERQ_CHROMIUM_PATH",
    HEADLESS_SHELL: "install it (`apt-get install chromium-headless-shell` on Debian/Ubuntu, or "
                    "`playwright install chromium-headless-shell`), set BROWSERQ_HEADLESS_SHELL_PATH, "
                    "or use BROWSERQ_BROWSER=chromium",
}

#: What each engine gives away to a detector page with the stealth layer on, beyond the driver's
#: own CDP tells (bench/stealth_surfaces.py, 77 checks; docs/browsers.md, "Engines", has the
#: figures). ``browserq doctor`` shows it.
STEALTH_TELLS = {
    CHROMIUM: "none beyond the driver's CDP tells (3 of 77 detector checks fail, all CDP)",
    HEADLESS_SHELL: "9 of 77 detector checks fail beyond the driver's 3 CDP tells: "
                    "HeadlessChrome in navigator.userAgentData brands (page and workers), no window.chrome, "
                    "no plugins and no PDF viewer, Notification.permission denied while permissions say "
                    "prompt, navigator.connection.rtt 0, Accept-Language without its q-list",
}


def has_settings_page(engine: str) -> bool:
    """Whether ``engine`` has Chrome's WebUI (``chrome://settings``), where browserq turns network
    prediction off (browsers/prediction.py). The headless shell has none: its embedder is
    Chromium's headless layer, which does not preconnect navigations (no foreign connection on any
    path of tests/browsers/test_egress_paths.py with the pref left alone), so there is nothing to
    turn off and nothing to wait 15 s for."""
    return engine == CHROMIUM


def usable_engine(name: str) -> str:
    """``name`` as an engine (``BROWSERQ_BROWSER``), or ValueError naming the choices."""
    engine = name.strip().lower().replace("_", "-")
    if engine not in ENGINES:
        raise ValueError(f"unknown browser {name!r}; choose one of {', '.join(ENGINES)}")
    return engine


def resolve(engine: str, explicit: str | None) -> str | None:
    """The executable of ``engine`` to launch, or None: Playwright's own download of it.

    ``explicit`` (the engine's path setting) must exist. Otherwise the system package, then
    Playwright's download; the headless shell found nowhere is a :class:`ConfigError` saying what
    to install. (Chromium found nowhere is left to Playwright, whose launch error says the same.)
    """
    if explicit:
        if not Path(explicit).exists():
            raise ConfigError(
                f"{PATH_SETTING[engine]}={explicit!r} does not exist; point it at a "
                f"{'Chromium or Chrome' if engine == CHROMIUM else 'chrome-headless-shell'} binary, "
                f"or unset it to use a system one or the one `playwright install {PLAYWRIGHT_NAME[engine]}` "
                "downloads"
            )
        return explicit
    system = find_system(engine)
    if system is not None or engine == CHROMIUM:
        return system
    if playwright_download(engine) is None:
        raise ConfigError(f"BROWSERQ_BROWSER={engine} but no headless shell is installed: {INSTALL_HINT[engine]}")
    return None


def find_system(engine: str) -> str | None:
    """The engine's binary from a system package (the usual locations, then ``$PATH``)."""
    candidates = CHROMIUM_CANDIDATES if engine == CHROMIUM else HEADLESS_SHELL_CANDIDATES
    for candidate in candidates:
        if Path(candidate).exists():
            return candidate
    names = ("chromium", "chromium-browser", "google-chrome") if engine == CHROMIUM else (
        "chromium-headless-shell", "chrome-headless-shell")
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def playwright_download(engine: str) -> Path | None:
    """The engine's executable as ``playwright install`` puts it (Linux layout), if it is there."""
    root = _playwright_browsers_dir()
    if root is None or not root.is_dir():
        return None
    prefix, inside = _PLAYWRIGHT_BUILDS[engine]
    for build in sorted(root.glob(f"{prefix}[0-9]*"), reverse=True):  # newest revision first
        executable = build.joinpath(*inside)
        if executable.exists():
            return executable
    return None


def _playwright_browsers_dir() -> Path | None:
    """Playwright's browser registry: ``PLAYWRIGHT_BROWSERS_PATH`` or the per-user cache."""
    configured = os.environ.get("PLAYWRIGHT_BROWSERS_PATH")
    if configured == "0":  # inside the installed package
        try:
            import playwright
        except ImportError:
            return None
        return Path(playwright.__file__).parent / "driver" / "package" / ".local-browsers"
    if configured:
        return Path(configured)
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "ms-playwright"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "ms-playwright"


def launch_options(engine: str, executable: str | None) -> dict[str, Any]:
    """Extra ``chromium.launch`` options that make Playwright run ``engine``.

    With no executable, Playwright picks its own download, and headless it picks the *headless
    shell*: the full build is asked for by ``channel="chromium"`` (its new headless mode).
    """
    if executable is None and engine == CHROMIUM:
        return {"channel": "chromium"}
    return {}


def check_mode(engine: str, *, headless: bool) -> None:
    """ValueError when ``engine`` cannot run in the mode asked for (the shell has no headful mode)."""
    if engine == HEADLESS_SHELL and not headless:
        raise ValueError(
            "BROWSERQ_BROWSER=headless-shell runs headless only; set BROWSERQ_HEADLESS=true, "
            "or BROWSERQ_BROWSER=chromium for a headful browser"
        )


def describe_source(engine: str, executable: str | None, explicit: str | None) -> str:
    """Where the executable came from, for ``doctor``: the setting, the system, or Playwright."""
    if executable is None:
        found = playwright_download(engine)
        return f"Playwright's download ({found})" if found else "Playwright's download (not found)"
    if explicit:
        return PATH_SETTING[engine]
    return "system package"


__all__ = [
    "CHROMIUM",
    "CHROMIUM_CANDIDATES",
    "ENGINES",
    "HEADLESS_SHELL",
    "HEADLESS_SHELL_CANDIDATES",
    "INSTALL_HINT",
    "PATH_SETTING",
    "PLAYWRIGHT_NAME",
    "STEALTH_TELLS",
    "check_mode",
    "describe_source",
    "find_system",
    "launch_options",
    "playwright_download",
    "resolve",
    "usable_engine",
]
