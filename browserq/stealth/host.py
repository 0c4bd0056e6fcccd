"""What the machine's real browser is: its platform family, version and the values workers report.

Some surfaces (workers' ``navigator.platform``, ``hardwareConcurrency``, ``deviceMemory``) cannot be
overridden per context, so a coherent fingerprint copies them from the host (:class:`HostInfo`,
read once per launch by :func:`~browserq.stealth.apply.probe_host`).
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Literal

Platform = Literal["windows", "macos", "linux"]
PLATFORMS: tuple[Platform, ...] = ("windows", "macos", "linux")

#: What the reduced user-agent string says for each platform (Chrome freezes these since M110).
UA_OS_TOKEN: dict[str, str] = {
    "windows": "Windows NT 10.0; Win64; x64",
    "macos": "Macintosh; Intel Mac OS X 10_15_7",
    "linux": "X11; Linux x86_64",
}
NAVIGATOR_PLATFORM: dict[str, str] = {
    "windows": "Win32",
    "macos": "MacIntel",
    "linux": "Linux x86_64",
}
CH_PLATFORM: dict[Platform, str] = {"windows": "Windows", "macos": "macOS", "linux": "Linux"}

VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class HostInfo:
    """What the real browser on this machine reports (``probe_host`` reads it once per launch).

    Values here are what workers will show no matter what a page-level override says, so a
    fingerprint generated with ``host=`` copies them instead of inventing new ones.
    """

    chrome_version: str  # full, e.g. "156.0.8078.108"
    brand: str  # "Chromium" or "Google Chrome" (the browser's own, non-GREASE brand)
    platform: Platform
    navigator_platform: str
    platform_version: str
    architecture: str
    bitness: str
    hardware_concurrency: int
    device_memory: float | None
    languages: tuple[str, ...] = ("en-US", "en")  # the browser's default navigator.languages
    locale: str = "en-US"  # the browser's default Intl locale
    webgl_vendor: str | None = None
    webgl_renderer: str | None = None
    #: Chrome answered high-entropy client hints blank (launched with --user-agent, i.e.
    #: headless): cross-site iframes and shared/service workers will too, unless patched.
    blank_hints: bool = False


def host_platform() -> Platform:
    """The operating-system family this Python process (and its local Chromium) runs on."""
    if sys.platform.startswith("win"):
        return "windows"
    if sys.platform == "darwin":
        return "macos"
    return "linux"


def chrome_version_of(executable: str, timeout_s: float = 10.0) -> str | None:
    """Full version of a Chromium/Chrome binary (``<exe> --version``), or None if unreadable.

    Lets the launcher build :func:`~browserq.stealth.apply.launch_args` (whose ``--user-agent``
    needs the version) before the browser is started.
    """
    try:
        out = subprocess.run(
            [executable, "--version"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = VERSION_RE.search(out or "")
    return match.group(0) if match else None


def user_agent_for(platform: Platform, major: int) -> str:
    """Chrome's reduced user-agent string (no ``HeadlessChrome``) for a platform and version."""
    return (
        f"Mozilla/5.0 ({UA_OS_TOKEN[platform]}) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{major}.0.0.0 Safari/537.36"
    )
