"""The machine a visitor uses: screen, window geometry, CPU, memory, GPU and OS version.

Weighted tables of plausible (not exhaustive) values per platform, and :func:`draw_hardware`, which
draws one of each from a seeded generator. The order of the draws is part of every stored
identity's fingerprint: changing it changes what an existing named identity looks like.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

# (weight, value) tables: plausible, not exhaustive. Screens are CSS pixels (width, height, dpr).
SCREENS: dict[str, list[tuple[float, tuple[int, int, float]]]] = {
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
CHROME_UI_HEIGHT: dict[str, list[tuple[float, int]]] = {
    "windows": [(55, 79), (25, 87), (20, 111)],
    "macos": [(60, 80), (25, 87), (15, 113)],
    "linux": [(55, 85), (25, 79), (20, 112)],
}
CORES: dict[str, list[tuple[float, int]]] = {
    "windows": [(12, 4), (36, 8), (22, 12), (20, 16), (6, 20), (4, 6)],
    "macos": [(46, 8), (22, 10), (16, 12), (10, 11), (6, 14)],
    "linux": [(14, 4), (34, 8), (18, 12), (22, 16), (8, 24), (4, 32)],
}
MEMORY: dict[str, list[tuple[float, float]]] = {
    "windows": [(16, 4.0), (52, 8.0), (32, 16.0)],
    "macos": [(60, 8.0), (40, 16.0)],
    "linux": [(12, 4.0), (48, 8.0), (40, 16.0)],
}
# (weight, vendor, renderer) as Chrome's WEBGL_debug_renderer_info reports them (ANGLE strings).
GPUS: dict[str, list[tuple[float, str, str]]] = {
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
WINDOWS_VERSIONS = [(34, "10.0.0"), (30, "15.0.0"), (36, "19.0.0")]
MACOS_VERSIONS = [(18, "14.7.6"), (22, "15.5.0"), (30, "15.6.1"), (30, "26.0.1")]


def pick(rng: random.Random, table: Sequence[tuple[float, *tuple[Any, ...]]]) -> Any:
    """A row drawn by its weight: its one value, or the tuple of its values when it has several."""
    total = sum(w for w, *_ in table)
    x = rng.random() * total
    for row in table:
        x -= row[0]
        if x < 0:
            return row[1] if len(row) == 2 else row[1:]
    last = table[-1]
    return last[1] if len(last) == 2 else last[1:]




class Geometry(TypedDict):
    """A window on its screen, in CSS pixels."""

    avail: tuple[int, int, int, int]  # the work area: left, top, width, height
    outer: tuple[int, int]  # the window's outer width, height
    position: tuple[int, int]  # screenX, screenY
    viewport: tuple[int, int]  # the page's inner width, height


def window_geometry(rng: random.Random, platform: str, width: int, height: int) -> Geometry:
    """Work area, a maximized window and its inner viewport for a screen.

    Windows: taskbar at the bottom (40 or 48 px); a maximized window overhangs by its 8 px
    invisible borders (outer = work area + 16, position -8,-8). macOS: 25 px menu bar on top,
    Dock hidden or 70-ish px at the bottom. Linux (GNOME): 32 px top bar.
    """
    ui = pick(rng, CHROME_UI_HEIGHT[platform])
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


@dataclass(frozen=True)
class Hardware:
    """One draw from the tables for a platform (the values a host may override are here too)."""

    screen: tuple[int, int]
    device_scale_factor: float
    geometry: Geometry
    webgl_vendor: str
    webgl_renderer: str
    cores: int
    memory: float
    platform_version: str
    architecture: str


def draw_hardware(rng: random.Random, platform: str) -> Hardware:
    """Screen, window, GPU, cores, memory and OS version for ``platform``, in a fixed draw order."""
    width, height, dpr = pick(rng, SCREENS[platform])
    geometry = window_geometry(rng, platform, width, height)
    vendor, renderer = pick(rng, GPUS[platform])
    cores = pick(rng, CORES[platform])
    memory = pick(rng, MEMORY[platform])
    if platform == "windows":
        platform_version, architecture = pick(rng, WINDOWS_VERSIONS), "x86"
    elif platform == "macos":
        platform_version = pick(rng, MACOS_VERSIONS)
        architecture = "x86" if "Intel" in renderer else "arm"
    else:
        platform_version, architecture = "", "x86"
    return Hardware(
        screen=(width, height),
        device_scale_factor=dpr,
        geometry=geometry,
        webgl_vendor=vendor,
        webgl_renderer=renderer,
        cores=cores,
        memory=memory,
        platform_version=platform_version,
        architecture=architecture,
    )
