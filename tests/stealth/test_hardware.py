"""Hardware draws: deterministic for a generator state, plausible for each platform."""

from __future__ import annotations

import random

import pytest

from browserq.stealth.hardware import GPUS, SCREENS, draw_hardware, pick, window_geometry


@pytest.mark.parametrize("platform", ["windows", "macos", "linux"])
def test_a_draw_is_deterministic_and_comes_from_the_platforms_tables(platform: str) -> None:
    draws = [draw_hardware(random.Random(seed), platform) for seed in range(60)]
    assert draws[0] == draw_hardware(random.Random(0), platform)
    screens = {(w, h) for _, (w, h, _) in SCREENS[platform]}
    renderers = {renderer for _, _, renderer in GPUS[platform]}
    for hw in draws:
        assert hw.screen in screens and hw.webgl_renderer in renderers
        _left, _top, width, height = hw.geometry["avail"]
        assert width == hw.screen[0] and height < hw.screen[1]
        assert hw.geometry["viewport"][1] < height  # the browser's own UI takes some height
    assert len({hw.screen for hw in draws}) > 1 and len({hw.cores for hw in draws}) > 1
    if platform == "macos":
        assert {hw.architecture for hw in draws} == {"arm"}  # every listed Mac GPU is Apple's
    if platform == "linux":
        assert {hw.platform_version for hw in draws} == {""}


def test_windows_maximized_windows_overhang_by_their_borders() -> None:
    geometry = window_geometry(random.Random(1), "windows", 1920, 1080)
    assert geometry["position"] == (-8, -8)
    assert geometry["outer"][0] == 1920 + 16


def test_pick_follows_the_weights() -> None:
    rng = random.Random(7)
    picks = [pick(rng, [(90, "often"), (10, "rarely")]) for _ in range(2000)]
    assert 0.85 < picks.count("often") / len(picks) < 0.95
    assert pick(rng, [(1, "vendor", "renderer")]) == ("vendor", "renderer")  # rows of three
