"""Identity profiles: one realistic desktop visitor, described consistently on every surface.

A :class:`Fingerprint` is a frozen description — user agent, client hints, platform, languages,
timezone, screen and window geometry, hardware, WebGL — generated deterministically from a seed
(a named identity keeps its fingerprint across runs) and varied across seeds. It describes; it does
not touch a browser: :mod:`browserq.stealth.apply` makes a browser context match it.

**Coherence first.** Some surfaces cannot be changed per context without being caught: dedicated,
shared and service workers report the real ``navigator.platform``, ``hardwareConcurrency`` and
``deviceMemory`` whatever a page-level override says (measured on Chromium 156, see README.md).
So, by default, a fingerprint takes those from the machine it will run on — pass
``host=await probe_host(browser)`` — and its platform is the host's operating system. Every
other property (screen, window, timezone, locale, GPU) varies freely. Asking for another platform
(``platform="windows"``) is supported and produces a plausible Windows visitor, but workers will
still say ``Linux x86_64``: the README lists exactly which checks that costs.
"""

from __future__ import annotations

import hashlib
import random
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

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
CH_PLATFORM: dict[str, str] = {"windows": "Windows", "macos": "macOS", "linux": "Linux"}

_VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)\.(\d+)")


# --- hosts ---------------------------------------------------------------------------------------
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
    match = _VERSION_RE.search(out or "")
    return match.group(0) if match else None


# --- client-hint brands ----------------------------------------------------------------------------
_GREASE_CHARS = (" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_")
_GREASE_VERSIONS = ("8", "99", "24")
_ORDERS_2 = ((0, 1), (1, 0))
_ORDERS_3 = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))


def brand_list(
    major: int, full_version: str, brand: str
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The ``brands`` and ``fullVersionList`` Chrome reports for ``major``, GREASE included.

    Chrome derives the GREASE ("Not?A_Brand") entry and the order of the list from the major
    version, so every real Chrome 156 sends the same list; reproducing it exactly matters — a list
    in another order is a tell. Checked against the browser's own list in the tests.
    """
    grease = f"Not{_GREASE_CHARS[major % 11]}A{_GREASE_CHARS[(major + 1) % 11]}Brand"
    grease_version = _GREASE_VERSIONS[major % 3]
    entries = [
        (grease, grease_version, f"{grease_version}.0.0.0"),
        ("Chromium", str(major), full_version),
    ]
    if brand != "Chromium":
        entries.append((brand, str(major), full_version))
        order = _ORDERS_3[major % 6]
    else:
        order = _ORDERS_2[major % 2]
    placed: list[tuple[str, str, str]] = [entries[0]] * len(entries)
    for entry, slot in zip(entries, order, strict=True):
        placed[slot] = entry
    return (
        [{"brand": b, "version": v} for b, v, _ in placed],
        [{"brand": b, "version": f} for b, _, f in placed],
    )


def sec_ch_ua(brands: Sequence[dict[str, str]]) -> str:
    """Structured-header form of a brand list: ``"Chromium";v="156", ...``."""
    return ", ".join(f'"{b["brand"]}";v="{b["version"]}"' for b in brands)


# --- languages -------------------------------------------------------------------------------------
def accept_language_header(languages: Sequence[str]) -> str:
    """The ``Accept-Language`` header Chrome sends for ``navigator.languages``.

    Chrome adds the base language after a run of regional variants that lacks it
    (``["de-DE"]`` → ``de-DE,de;q=0.9``) and gives q-values falling by 0.1 (never below 0.1).
    """
    expanded: list[str] = []
    langs = list(languages)
    for i, lang in enumerate(langs):
        expanded.append(lang)
        base = lang.split("-")[0]
        nxt = langs[i + 1].split("-")[0] if i + 1 < len(langs) else None
        if base != lang and nxt != base and base not in langs and base not in expanded:
            expanded.append(base)
    parts = []
    for i, lang in enumerate(expanded):
        if i == 0:
            parts.append(lang)
        else:
            parts.append(f"{lang};q={max(0.1, round(1 - i / 10, 1)):g}")
    return ",".join(parts)


#: Region hint (a proxy's ``#region=``) → (locale, timezones it may use). First timezone is the
#: most common; the generator picks among them.
REGIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "us": (
        "en-US",
        ("America/New_York", "America/Chicago", "America/Los_Angeles", "America/Denver"),
    ),
    "ca": ("en-CA", ("America/Toronto", "America/Vancouver", "America/Edmonton")),
    "gb": ("en-GB", ("Europe/London",)),
    "ie": ("en-IE", ("Europe/Dublin",)),
    "au": ("en-AU", ("Australia/Sydney", "Australia/Melbourne", "Australia/Brisbane")),
    "nz": ("en-NZ", ("Pacific/Auckland",)),
    "in": ("en-IN", ("Asia/Kolkata",)),
    "sg": ("en-SG", ("Asia/Singapore",)),
    "de": ("de-DE", ("Europe/Berlin",)),
    "at": ("de-AT", ("Europe/Vienna",)),
    "ch": ("de-CH", ("Europe/Zurich",)),
    "fr": ("fr-FR", ("Europe/Paris",)),
    "be": ("fr-BE", ("Europe/Brussels",)),
    "nl": ("nl-NL", ("Europe/Amsterdam",)),
    "es": ("es-ES", ("Europe/Madrid",)),
    "pt": ("pt-PT", ("Europe/Lisbon",)),
    "it": ("it-IT", ("Europe/Rome",)),
    "pl": ("pl-PL", ("Europe/Warsaw",)),
    "cz": ("cs-CZ", ("Europe/Prague",)),
    "se": ("sv-SE", ("Europe/Stockholm",)),
    "no": ("nb-NO", ("Europe/Oslo",)),
    "dk": ("da-DK", ("Europe/Copenhagen",)),
    "fi": ("fi-FI", ("Europe/Helsinki",)),
    "gr": ("el-GR", ("Europe/Athens",)),
    "ro": ("ro-RO", ("Europe/Bucharest",)),
    "hu": ("hu-HU", ("Europe/Budapest",)),
    "ua": ("uk-UA", ("Europe/Kyiv",)),
    "tr": ("tr-TR", ("Europe/Istanbul",)),
    "br": ("pt-BR", ("America/Sao_Paulo",)),
    "mx": ("es-MX", ("America/Mexico_City",)),
    "ar": ("es-AR", ("America/Argentina/Buenos_Aires",)),
    "jp": ("ja-JP", ("Asia/Tokyo",)),
    "kr": ("ko-KR", ("Asia/Seoul",)),
    "tw": ("zh-TW", ("Asia/Taipei",)),
    "hk": ("zh-HK", ("Asia/Hong_Kong",)),
    "za": ("en-ZA", ("Africa/Johannesburg",)),
}
REGION_ALIASES = {"uk": "gb", "usa": "us", "en": "us"}
US_STATES = {
    "ny": "America/New_York",
    "nj": "America/New_York",
    "fl": "America/New_York",
    "va": "America/New_York",
    "ga": "America/New_York",
    "ma": "America/New_York",
    "pa": "America/New_York",
    "oh": "America/New_York",
    "il": "America/Chicago",
    "tx": "America/Chicago",
    "mn": "America/Chicago",
    "co": "America/Denver",
    "az": "America/Phoenix",
    "ut": "America/Denver",
    "ca": "America/Los_Angeles",
    "wa": "America/Los_Angeles",
    "or": "America/Los_Angeles",
    "nv": "America/Los_Angeles",
}


def resolve_region(region: str | None) -> tuple[str, tuple[str, ...]]:
    """(locale, candidate timezones) for a region hint like ``de``, ``DE``, ``us-ca``, ``uk``.

    ``None`` means the United States (the largest single population of desktop Chrome users).
    An unknown code raises ``ValueError`` naming the known ones: a silently wrong timezone would
    contradict the proxy's exit IP, which is exactly what detectors compare.
    """
    if region is None:
        return REGIONS["us"]
    code = region.strip().lower().replace("_", "-")
    country, _, sub = code.partition("-")
    country = REGION_ALIASES.get(country, country)
    if country not in REGIONS:
        known = ", ".join(sorted(REGIONS))
        raise ValueError(f"unknown region hint {region!r}; known: {known} (optionally us-<state>)")
    locale, zones = REGIONS[country]
    if country == "us" and sub in US_STATES:
        zones = (US_STATES[sub],)
    return locale, zones


# --- hardware / display tables ---------------------------------------------------------------------
# (weight, value) tables: plausible, not exhaustive. Screens are CSS pixels (width, height, dpr).
_SCREENS: dict[str, list[tuple[float, tuple[int, int, float]]]] = {
    "windows": [
        (34, (1920, 1080, 1.0)),
        (20, (1536, 864, 1.25)),
        (9, (1366, 768, 1.0)),
        (9, (2560, 1440, 1.0)),
        (6, (1440, 900, 1.0)),
        (6, (1600, 900, 1.0)),
        (5, (1920, 1200, 1.0)),
        (4, (1280, 800, 1.5)),
        (4, (2048, 1152, 1.25)),
        (3, (1707, 960, 1.5)),
    ],
    "macos": [
        (26, (1440, 900, 2.0)),
        (20, (1512, 982, 2.0)),
        (14, (1728, 1117, 2.0)),
        (12, (1470, 956, 2.0)),
        (10, (1920, 1080, 1.0)),
        (8, (2560, 1440, 1.0)),
        (6, (1680, 1050, 2.0)),
        (4, (1280, 800, 2.0)),
    ],
    "linux": [
        (44, (1920, 1080, 1.0)),
        (14, (2560, 1440, 1.0)),
        (10, (1366, 768, 1.0)),
        (10, (1920, 1200, 1.0)),
        (8, (1600, 900, 1.0)),
        (6, (1440, 900, 1.0)),
        (4, (1680, 1050, 1.0)),
        (4, (3840, 2160, 2.0)),
    ],
}
# Browser UI height (tab strip + toolbar [+ bookmarks bar]) between outer and inner height.
_CHROME_UI_HEIGHT: dict[str, list[tuple[float, int]]] = {
    "windows": [(55, 79), (25, 87), (20, 111)],
    "macos": [(60, 80), (25, 87), (15, 113)],
    "linux": [(55, 85), (25, 79), (20, 112)],
}
_CORES: dict[str, list[tuple[float, int]]] = {
    "windows": [(12, 4), (36, 8), (22, 12), (20, 16), (6, 20), (4, 6)],
    "macos": [(46, 8), (22, 10), (16, 12), (10, 11), (6, 14)],
    "linux": [(14, 4), (34, 8), (18, 12), (22, 16), (8, 24), (4, 32)],
}
_MEMORY: dict[str, list[tuple[float, float]]] = {
    "windows": [(16, 4.0), (52, 8.0), (32, 16.0)],
    "macos": [(60, 8.0), (40, 16.0)],
    "linux": [(12, 4.0), (48, 8.0), (40, 16.0)],
}
# (weight, vendor, renderer) as Chrome's WEBGL_debug_renderer_info reports them (ANGLE strings).
_GPUS: dict[str, list[tuple[float, str, str]]] = {
    "windows": [
        (
            22,
            "Google Inc. (Intel)",
            "ANGLE (Intel, Intel(R) UHD Graphics 620 Direct3D11 vs_5_0 ps_5_0, D3D11)",
        ),
        (
            18,
            "Google Inc. (Intel)",
            "ANGLE (Intel, Intel(R) Iris(R) Xe Graphics (0x00009A49) Direct3D11 vs_5_0 ps_5_0, D3D11)",
        ),
        (
            10,
            "Google Inc. (Intel)",
            "ANGLE (Intel, Intel(R) UHD Graphics (0x00009BC4) Direct3D11 vs_5_0 ps_5_0, D3D11)",
        ),
        (
            14,
            "Google Inc. (NVIDIA)",
            "ANGLE (NVIDIA, NVIDIA GeForce GTX 1650 (0x00001F82) Direct3D11 vs_5_0 ps_5_0, D3D11)",
        ),
        (
            12,
            "Google Inc. (NVIDIA)",
            "ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 (0x00002503) Direct3D11 vs_5_0 ps_5_0, D3D11)",
        ),
        (
            8,
            "Google Inc. (NVIDIA)",
            "ANGLE (NVIDIA, NVIDIA GeForce RTX 4060 (0x00002882) Direct3D11 vs_5_0 ps_5_0, D3D11)",
        ),
        (
            10,
            "Google Inc. (AMD)",
            "ANGLE (AMD, AMD Radeon(TM) Graphics (0x00001638) Direct3D11 vs_5_0 ps_5_0, D3D11)",
        ),
        (
            6,
            "Google Inc. (AMD)",
            "ANGLE (AMD, AMD Radeon RX 6600 (0x000073FF) Direct3D11 vs_5_0 ps_5_0, D3D11)",
        ),
    ],
    "macos": [
        (
            30,
            "Google Inc. (Apple)",
            "ANGLE (Apple, ANGLE Metal Renderer: Apple M1, Unspecified Version)",
        ),
        (
            26,
            "Google Inc. (Apple)",
            "ANGLE (Apple, ANGLE Metal Renderer: Apple M2, Unspecified Version)",
        ),
        (
            22,
            "Google Inc. (Apple)",
            "ANGLE (Apple, ANGLE Metal Renderer: Apple M3, Unspecified Version)",
        ),
        (
            12,
            "Google Inc. (Apple)",
            "ANGLE (Apple, ANGLE Metal Renderer: Apple M1 Pro, Unspecified Version)",
        ),
        (
            10,
            "Google Inc. (Apple)",
            "ANGLE (Apple, ANGLE Metal Renderer: Apple M2 Pro, Unspecified Version)",
        ),
    ],
    "linux": [
        (
            30,
            "Google Inc. (Intel)",
            "ANGLE (Intel, Mesa Intel(R) UHD Graphics 620 (KBL GT2), OpenGL 4.6)",
        ),
        (
            22,
            "Google Inc. (Intel)",
            "ANGLE (Intel, Mesa Intel(R) Xe Graphics (TGL GT2), OpenGL 4.6)",
        ),
        (
            18,
            "Google Inc. (AMD)",
            "ANGLE (AMD, AMD Radeon Graphics (radeonsi, renoir, LLVM 15.0.7, DRM 3.54, 6.5.0-35-generic), OpenGL 4.6)",
        ),
        (
            16,
            "Google Inc. (NVIDIA Corporation)",
            "ANGLE (NVIDIA Corporation, NVIDIA GeForce GTX 1660/PCIe/SSE2, OpenGL 4.5.0)",
        ),
        (
            14,
            "Google Inc. (NVIDIA Corporation)",
            "ANGLE (NVIDIA Corporation, NVIDIA GeForce RTX 3070/PCIe/SSE2, OpenGL 4.5.0)",
        ),
    ],
}
# Windows 10 22H2 reports "10.0.0"; Windows 11 23H2 "15.0.0", 24H2 "19.0.0" (UniversalApiContract).
_WINDOWS_VERSIONS = [(34, "10.0.0"), (30, "15.0.0"), (36, "19.0.0")]
_MACOS_VERSIONS = [(18, "14.7.6"), (22, "15.5.0"), (30, "15.6.1"), (30, "26.0.1")]


def _pick(rng: random.Random, table: Sequence[tuple[float, Any]]) -> Any:
    total = sum(w for w, *_ in table)
    x = rng.random() * total
    for row in table:
        x -= row[0]
        if x < 0:
            return row[1] if len(row) == 2 else row[1:]
    last = table[-1]
    return last[1] if len(last) == 2 else last[1:]


# --- the fingerprint ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fingerprint:
    """One desktop visitor. All sizes are CSS pixels. Build with :meth:`generate`."""

    seed: str
    platform: Platform
    chrome_version: str  # full version, e.g. "156.0.8078.108"
    brand: str  # "Google Chrome" or "Chromium"
    user_agent: str
    navigator_platform: str
    platform_version: str  # client-hint platformVersion
    architecture: str  # "x86" or "arm"
    bitness: str
    brands: tuple[tuple[str, str], ...]  # (brand, major) incl. GREASE, in Chrome's order
    full_version_list: tuple[tuple[str, str], ...]
    locale: str
    languages: tuple[str, ...]
    timezone: str
    screen: tuple[int, int]
    avail: tuple[int, int, int, int]  # left, top, width, height
    outer: tuple[int, int]
    window_position: tuple[int, int]  # screenX, screenY
    viewport: tuple[int, int]
    device_scale_factor: float
    color_depth: int
    hardware_concurrency: int
    device_memory: float
    webgl_vendor: str
    webgl_renderer: str
    host_coherent: bool = field(default=False)  # platform/hardware copied from the real host

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def generate(
        cls,
        seed: str,
        *,
        chrome_version: str,
        region: str | None = None,
        platform: Platform | None = None,
        brand: str | None = None,
        host: HostInfo | None = None,
    ) -> Fingerprint:
        """A deterministic visitor for ``seed``.

        ``chrome_version``: the real browser's version (``browser.version``) — a user agent that
        claims another version than the engine is caught by feature tests. ``region``: a proxy
        region hint (``de`` → ``de-DE``, ``Europe/Berlin``). ``platform``: defaults to the host's
        OS family (the only one workers agree with). ``brand``: ``"Google Chrome"`` or
        ``"Chromium"``; defaults to the host browser's own brand when ``host`` is given (service
        and shared workers report it), else ``"Google Chrome"``. ``host``: the real browser's
        values (:func:`~browserq.stealth.apply.probe_host`); when its platform is the chosen one,
        hardware and platform details are copied from it so workers and headers agree.
        """
        match = _VERSION_RE.fullmatch(chrome_version.strip())
        if not match:
            raise ValueError(
                f"chrome_version must be a full version like 156.0.8078.108, got {chrome_version!r}"
            )
        major = int(match.group(1))
        chosen: Platform = platform or (host.platform if host else host_platform())
        if chosen not in PLATFORMS:
            raise ValueError(f"platform must be one of {PLATFORMS}, got {chosen!r}")
        coherent = host is not None and host.platform == chosen
        brand = brand or (host.brand if host else "Google Chrome")
        locale, zones = resolve_region(region)

        digest = hashlib.sha256(f"browserq-stealth/1\0{seed}".encode()).digest()
        rng = random.Random(int.from_bytes(digest[:16], "big"))

        timezone = (
            zones[0]
            if len(zones) == 1
            else _pick(rng, [(len(zones) - i, z) for i, z in enumerate(zones)])
        )
        width, height, dpr = _pick(rng, _SCREENS[chosen])
        geometry = _window_geometry(rng, chosen, width, height)
        vendor, renderer = _pick(rng, _GPUS[chosen])
        cores = _pick(rng, _CORES[chosen])
        memory = _pick(rng, _MEMORY[chosen])
        if chosen == "windows":
            platform_version, architecture = _pick(rng, _WINDOWS_VERSIONS), "x86"
        elif chosen == "macos":
            platform_version = _pick(rng, _MACOS_VERSIONS)
            architecture = "x86" if "Intel" in renderer else "arm"
        else:
            platform_version, architecture = "", "x86"
        bitness = "64"
        navigator_platform = NAVIGATOR_PLATFORM[chosen]
        # The browser's default languages (--accept-lang) reach every worker and frame; copy
        # them when they are this region's. Otherwise the locale plus its base language, which
        # Chrome's Accept-Language expansion leaves unchanged ("de-DE,de;q=0.9").
        if host is not None and host.languages and host.languages[0] == locale:
            languages = tuple(host.languages)
        else:
            base = locale.split("-")[0]
            languages = (locale, base) if base != locale else (locale,)
        if coherent:
            assert host is not None
            cores, navigator_platform = host.hardware_concurrency, host.navigator_platform
            memory = host.device_memory if host.device_memory is not None else memory
            platform_version, architecture, bitness = (
                host.platform_version,
                host.architecture,
                host.bitness,
            )

        brands, full_list = brand_list(major, chrome_version, brand)
        return cls(
            seed=seed,
            platform=chosen,
            chrome_version=chrome_version,
            brand=brand,
            user_agent=user_agent_for(chosen, major),
            navigator_platform=navigator_platform,
            platform_version=platform_version,
            architecture=architecture,
            bitness=bitness,
            brands=tuple((b["brand"], b["version"]) for b in brands),
            full_version_list=tuple((b["brand"], b["version"]) for b in full_list),
            locale=locale,
            languages=languages,
            timezone=timezone,
            screen=(width, height),
            avail=geometry["avail"],
            outer=geometry["outer"],
            window_position=geometry["position"],
            viewport=geometry["viewport"],
            device_scale_factor=dpr,
            color_depth=24,
            hardware_concurrency=int(cores),
            device_memory=float(memory),
            webgl_vendor=vendor,
            webgl_renderer=renderer,
            host_coherent=coherent,
        )

    # -- derived views ------------------------------------------------------------------------------
    @property
    def chrome_major(self) -> int:
        return int(self.chrome_version.split(".")[0])

    @property
    def accept_language(self) -> str:
        """The ``Accept-Language`` header real Chrome sends for :attr:`languages`."""
        return accept_language_header(self.languages)

    @property
    def ch_platform(self) -> str:
        return CH_PLATFORM[self.platform]

    def user_agent_metadata(self) -> dict[str, Any]:
        """``userAgentMetadata`` for CDP ``Emulation.setUserAgentOverride``."""
        return {
            "brands": [{"brand": b, "version": v} for b, v in self.brands],
            "fullVersionList": [{"brand": b, "version": v} for b, v in self.full_version_list],
            "fullVersion": self.chrome_version,
            "platform": self.ch_platform,
            "platformVersion": self.platform_version,
            "architecture": self.architecture,
            "model": "",
            "mobile": False,
            "bitness": self.bitness,
            "wow64": False,
            "formFactors": ["Desktop"],
        }

    def client_hint_headers(self) -> dict[str, str]:
        """Every ``sec-ch-ua*`` header value this visitor sends (once a site asked for them)."""
        quote = lambda s: f'"{s}"'  # noqa: E731
        return {
            "sec-ch-ua": sec_ch_ua([{"brand": b, "version": v} for b, v in self.brands]),
            "sec-ch-ua-mobile": "?0",
            "sec-ch-ua-platform": quote(self.ch_platform),
            "sec-ch-ua-platform-version": quote(self.platform_version),
            "sec-ch-ua-arch": quote(self.architecture),
            "sec-ch-ua-bitness": quote(self.bitness),
            "sec-ch-ua-model": quote(""),
            "sec-ch-ua-full-version-list": sec_ch_ua(
                [{"brand": b, "version": v} for b, v in self.full_version_list]
            ),
            "sec-ch-ua-wow64": "?0",
        }

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["accept_language"] = self.accept_language
        return data


def user_agent_for(platform: Platform, major: int) -> str:
    """Chrome's reduced user-agent string (no ``HeadlessChrome``) for a platform and version."""
    return (
        f"Mozilla/5.0 ({UA_OS_TOKEN[platform]}) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{major}.0.0.0 Safari/537.36"
    )


def _window_geometry(
    rng: random.Random, platform: str, width: int, height: int
) -> dict[str, tuple[int, ...]]:
    """Work area, a maximized window and its inner viewport for a screen.

    Windows: taskbar at the bottom (40 or 48 px); a maximized window overhangs by its 8 px
    invisible borders (outer = work area + 16, position -8,-8). macOS: 25 px menu bar on top,
    Dock hidden or 70-ish px at the bottom. Linux (GNOME): 32 px top bar.
    """
    ui = _pick(rng, _CHROME_UI_HEIGHT[platform])
    if platform == "windows":
        taskbar = 40 if rng.random() < 0.6 else 48
        avail = (0, 0, width, height - taskbar)
        outer = (width + 16, avail[3] + 16)
        position = (-8, -8)
        viewport = (width, avail[3] - ui)
    elif platform == "macos":
        dock = 0 if rng.random() < 0.45 else 70
        avail = (0, 25, width, height - 25 - dock)
        outer = (width, avail[3])
        position = (0, 25)
        viewport = (width, avail[3] - ui)
    else:
        bar = 32 if rng.random() < 0.7 else 27
        avail = (0, bar, width, height - bar)
        outer = (width, avail[3])
        position = (0, bar)
        viewport = (width, avail[3] - ui)
    return {"avail": avail, "outer": outer, "position": position, "viewport": viewport}
