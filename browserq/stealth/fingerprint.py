"""Fingerprints: one realistic desktop visitor, described consistently on every surface.

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

The parts: :mod:`~browserq.stealth.host` (the real browser), :mod:`~browserq.stealth.regions`
(locale and timezone), :mod:`~browserq.stealth.hardware` (screen, GPU, CPU, memory) and
:mod:`~browserq.stealth.hints` (client hints, Accept-Language); this module puts them together.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from browserq.stealth.hardware import Hardware, draw_hardware, pick
from browserq.stealth.hints import accept_language_header, brand_list, sec_ch_ua
from browserq.stealth.host import (
    CH_PLATFORM,
    NAVIGATOR_PLATFORM,
    PLATFORMS,
    UA_OS_TOKEN,
    VERSION_RE,
    HostInfo,
    Platform,
    chrome_version_of,
    host_platform,
    user_agent_for,
)
from browserq.stealth.regions import REGION_ALIASES, REGIONS, US_STATES, resolve_region

#: Names importable from here before the split (the generator's parts now live in their own modules).
__all__ = [
    "CH_PLATFORM",
    "NAVIGATOR_PLATFORM",
    "PLATFORMS",
    "REGIONS",
    "REGION_ALIASES",
    "UA_OS_TOKEN",
    "US_STATES",
    "Fingerprint",
    "HostInfo",
    "Platform",
    "accept_language_header",
    "brand_list",
    "chrome_version_of",
    "host_platform",
    "resolve_region",
    "sec_ch_ua",
    "user_agent_for",
]


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
        match = VERSION_RE.fullmatch(chrome_version.strip())
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

        rng = _seeded(seed)
        timezone = (  # drawn first: the draw order is part of every stored identity
            zones[0]
            if len(zones) == 1
            else pick(rng, [(len(zones) - i, z) for i, z in enumerate(zones)])
        )
        hardware = draw_hardware(rng, chosen)
        system = _system(chosen, hardware, host if coherent else None)
        brands, full_list = brand_list(major, chrome_version, brand)
        geometry = hardware.geometry
        return cls(
            seed=seed,
            platform=chosen,
            chrome_version=chrome_version,
            brand=brand,
            user_agent=user_agent_for(chosen, major),
            brands=tuple((b["brand"], b["version"]) for b in brands),
            full_version_list=tuple((b["brand"], b["version"]) for b in full_list),
            locale=locale,
            languages=_languages(locale, host),
            timezone=timezone,
            screen=hardware.screen,
            avail=geometry["avail"],
            outer=geometry["outer"],
            window_position=geometry["position"],
            viewport=geometry["viewport"],
            device_scale_factor=hardware.device_scale_factor,
            color_depth=24,
            webgl_vendor=hardware.webgl_vendor,
            webgl_renderer=hardware.webgl_renderer,
            host_coherent=coherent,
            **system,
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


def _seeded(seed: str) -> random.Random:
    """The generator a seed's draws come from (versioned: changing it changes every identity)."""
    digest = hashlib.sha256(f"browserq-stealth/1\0{seed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def _languages(locale: str, host: HostInfo | None) -> tuple[str, ...]:
    """``navigator.languages`` for a locale.

    The browser's default languages (--accept-lang) reach every worker and frame; copy them when
    they are this region's. Otherwise the locale plus its base language, which Chrome's
    Accept-Language expansion leaves unchanged ("de-DE,de;q=0.9").
    """
    if host is not None and host.languages and host.languages[0] == locale:
        return tuple(host.languages)
    base = locale.split("-")[0]
    return (locale, base) if base != locale else (locale,)


def _system(platform: Platform, hardware: Hardware, host: HostInfo | None) -> dict[str, Any]:
    """Platform and hardware fields: drawn, or copied from a ``host`` of the same platform
    (workers report the host's whatever a page-level override says)."""
    fields: dict[str, Any] = {
        "navigator_platform": NAVIGATOR_PLATFORM[platform],
        "platform_version": hardware.platform_version,
        "architecture": hardware.architecture,
        "bitness": "64",
        "hardware_concurrency": int(hardware.cores),
        "device_memory": float(hardware.memory),
    }
    if host is not None:
        memory = host.device_memory if host.device_memory is not None else hardware.memory
        fields.update(
            navigator_platform=host.navigator_platform,
            platform_version=host.platform_version,
            architecture=host.architecture,
            bitness=host.bitness,
            hardware_concurrency=int(host.hardware_concurrency),
            device_memory=float(memory),
        )
    return fields
