"""Launching Chromium: which binary, which flags, and how to find its process afterwards."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import structlog
from playwright.async_api import Browser, Playwright

from browserq import engines
from browserq.browsers import api, flags
from browserq.browsers.display import display_for_headful
from browserq.browsers.errors import BrowserLaunchFailed, launch_failure
from browserq.errors import ConfigError
from browserq.settings import Settings

#: An inert switch that tags the browser's command line so its process can be found again
#: (Playwright does not expose the PID); Chromium ignores switches it does not know.
MARKER_SWITCH = "--browserq-instance"

log = structlog.get_logger(__name__)


async def launch_chromium(playwright: Playwright, settings: Settings) -> tuple[Browser, str]:
    """Launch Chromium for one worker process; returns the browser and its instance marker.

    Every failure is a :class:`BrowserLaunchFailed` (a ConfigError) whose message says what to
    fix: this is where a launch error enters browserq, so it is translated here, once.
    """
    marker = uuid.uuid4().hex[:16]
    if settings.driver != api.NAME:  # a settings file or a keyword, too late to choose the driver
        raise BrowserLaunchFailed(
            f"this process runs the {api.NAME} driver but the settings say driver={settings.driver!r}: "
            f"set BROWSERQ_DRIVER={settings.driver} in the environment (the driver is loaded before settings)"
        )
    try:
        executable = settings.resolve_chromium()
    except ConfigError as exc:  # a path setting names no file, or the engine is not installed
        raise BrowserLaunchFailed(str(exc)) from exc
    args = [*settings.chromium_launch_args(), f"{MARKER_SWITCH}={marker}"]
    ignore: list[str] = []
    if settings.stealth:
        from browserq import stealth

        version = _chrome_version(executable) if executable else None
        stealth_args = stealth.launch_args(chrome_version=version, headless=settings.headless)
        args += [a for a in stealth_args if a not in args]
        ignore = stealth.ignore_default_args()
    args = flags.tuned_args(args, headless=settings.headless)
    display = None if settings.headless else display_for_headful()  # may start Xvfb
    try:
        browser = await playwright.chromium.launch(
            env={**os.environ, "DISPLAY": display} if display else None,
            executable_path=executable,
            **engines.launch_options(settings.browser, executable),  # which of Playwright's builds
            headless=settings.headless,
            args=args,
            ignore_default_args=ignore or None,
            chromium_sandbox=settings.chromium_sandbox,
            handle_sigint=False,
            handle_sigterm=False,
            handle_sighup=False,
        )
    except Exception as exc:
        raise launch_failure(exc, executable) from exc
    _warn_about_dropped_defaults(marker)
    return browser, marker


def _warn_about_dropped_defaults(marker: str) -> None:
    """Say so when our merged feature lists lack a default of the installed Playwright.

    The names are learned (:func:`flags.learn_defaults`) and carried from the next launch on;
    the warning asks for the mirror in ``browsers/flags.py`` to be brought up to date.
    """
    found = _find_browser(marker)
    if found is None:  # not Linux, or the process is already gone: nothing to read
        return
    dropped = flags.dropped_defaults(found[1])
    if dropped:
        flags.learn_defaults(dropped)
        log.warning(
            "chromium_feature_defaults_dropped", dropped=dropped,
            hint="this Playwright passes feature defaults browserq does not know; they are added "
                 "from the next launch on — update PLAYWRIGHT_FEATURE_DEFAULTS in browserq/browsers/flags.py",
        )


@lru_cache(maxsize=4)
def _chrome_version(executable: str) -> str | None:
    from browserq.stealth import chrome_version_of

    return chrome_version_of(executable)


def find_browser_pid(marker: str) -> int | None:
    """PID of the Chromium browser process carrying ``marker`` (Linux /proc), or None."""
    found = _find_browser(marker)
    return found[0] if found else None


def _find_browser(marker: str) -> tuple[int, list[str]] | None:
    """PID and command-line arguments of the browser process carrying ``marker``, in one scan."""
    needle = f"{MARKER_SWITCH}={marker}".encode()
    for pid, cmdline in _iter_cmdlines():
        if needle in cmdline and b"--type=" not in cmdline:
            return pid, cmdline.decode(errors="replace").split("\0")
    return None


def browser_process_tree(marker: str) -> list[int]:
    """PIDs of every Chromium process (browser, renderers, GPU, utility) of one instance."""
    root = find_browser_pid(marker)
    if root is None:
        return []
    children: dict[int, list[int]] = {}
    for pid in _all_pids():
        ppid = _parent_pid(pid)
        if ppid is not None:
            children.setdefault(ppid, []).append(pid)
    tree, stack = [], [root]
    while stack:
        pid = stack.pop()
        tree.append(pid)
        stack.extend(children.get(pid, []))
    return tree


def chromium_pids_with_marker(prefix: str = "") -> list[int]:
    """All processes launched by browserq (any instance), for leak checks in tests and the CLI."""
    needle = f"{MARKER_SWITCH}={prefix}".encode()
    return [pid for pid, cmdline in _iter_cmdlines() if needle in cmdline]


def _all_pids() -> list[int]:
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    return [int(p.name) for p in proc.iterdir() if p.name.isdigit()]


def _iter_cmdlines() -> Iterator[tuple[int, bytes]]:
    for pid in _all_pids():
        try:
            yield pid, Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue


def _parent_pid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 4, after the parenthesised command name (which may itself contain spaces).
    return int(stat.rsplit(")", 1)[1].split()[1])


def rss_bytes(pids: list[int]) -> int:
    """Summed resident set size of the given processes."""
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
    return total
