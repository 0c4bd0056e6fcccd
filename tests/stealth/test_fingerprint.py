"""Fingerprint generation: deterministic per seed, varied across seeds, internally consistent."""

from __future__ import annotations

import re
import sys

import pytest

from browserq.stealth import Fingerprint, HostInfo
from browserq.stealth.apply import context_options, launch_args, user_agent_override

VERSION = "156.0.8078.108"

HOST = HostInfo(
    chrome_version=VERSION,
    brand="Chromium",
    platform="linux",
    navigator_platform="Linux x86_64",
    platform_version="",
    architecture="x86",
    bitness="64",
    hardware_concurrency=6,
    device_memory=16,
    languages=("en-US",),
    locale="en-US",
)


def test_same_seed_same_fingerprint_and_other_seeds_differ() -> None:
    a = Fingerprint.generate("acct-1", chrome_version=VERSION, platform="windows")
    assert a == Fingerprint.generate("acct-1", chrome_version=VERSION, platform="windows")
    others = [
        Fingerprint.generate(f"acct-{i}", chrome_version=VERSION, platform="windows")
        for i in range(2, 40)
    ]
    for attr in (
        "screen",
        "viewport",
        "webgl_renderer",
        "hardware_concurrency",
        "platform_version",
    ):
        assert len({getattr(f, attr) for f in [a, *others]}) > 1, attr


def test_determinism_is_pinned() -> None:
    # A named identity must keep its fingerprint across processes and deploys: the generator
    # hashes the seed itself (no PYTHONHASHSEED dependence). Changing these values is a
    # breaking change for every stored identity.
    fp = Fingerprint.generate("pinned", chrome_version=VERSION, platform="windows")
    assert (
        fp.screen,
        fp.viewport,
        fp.device_scale_factor,
        fp.hardware_concurrency,
        fp.platform_version,
    ) == ((1600, 900), (1600, 773), 1.0, 4, "19.0.0")
    assert (
        fp.webgl_renderer
        == "ANGLE (Intel, Intel(R) UHD Graphics (0x00009BC4) Direct3D11 vs_5_0 ps_5_0, D3D11)"
    )


@pytest.mark.parametrize(
    "platform, token, nav, ch",
    [
        ("windows", "Windows NT 10.0; Win64; x64", "Win32", "Windows"),
        ("macos", "Macintosh; Intel Mac OS X 10_15_7", "MacIntel", "macOS"),
        ("linux", "X11; Linux x86_64", "Linux x86_64", "Linux"),
    ],
)
def test_platform_consistency(platform: str, token: str, nav: str, ch: str) -> None:
    for seed in ("a", "b", "c", "d"):
        fp = Fingerprint.generate(seed, chrome_version=VERSION, platform=platform)  # type: ignore[arg-type]
        assert fp.user_agent == (
            f"Mozilla/5.0 ({token}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
        )
        assert "Headless" not in fp.user_agent
        assert fp.navigator_platform == nav
        meta = fp.user_agent_metadata()
        assert meta["platform"] == ch and meta["mobile"] is False and meta["bitness"] == "64"
        assert meta["formFactors"] == ["Desktop"]
        assert meta["fullVersion"] == VERSION
        if platform == "windows":
            assert meta["platformVersion"] in {"10.0.0", "15.0.0", "19.0.0"}
            assert "Direct3D11" in fp.webgl_renderer
        if platform == "macos":
            assert re.fullmatch(r"\d+\.\d+\.\d+", meta["platformVersion"])
            assert "Apple" in fp.webgl_renderer and meta["architecture"] == "arm"
        if platform == "linux":
            assert "OpenGL" in fp.webgl_renderer
        assert fp.webgl_vendor.startswith("Google Inc. (")
        # Geometry: viewport inside the window, window inside (or, on Windows, overhanging by
        # its 8 px borders) the work area, work area inside the screen.
        _left, _top, aw, ah = fp.avail
        assert aw <= fp.screen[0] and ah < fp.screen[1]
        assert fp.viewport[0] <= fp.outer[0] and fp.outer[1] - fp.viewport[1] >= 70
        assert fp.outer[0] <= aw + 16 and fp.outer[1] <= ah + 16
        assert fp.viewport not in {(1280, 720), (800, 600)}
        assert fp.hardware_concurrency in {4, 6, 8, 10, 11, 12, 14, 16, 20, 24, 32}
        assert fp.device_memory in {4.0, 8.0, 16.0}


def test_client_hint_headers() -> None:
    fp = Fingerprint.generate(
        "x", chrome_version=VERSION, platform="windows", brand="Google Chrome"
    )
    h = fp.client_hint_headers()
    assert h["sec-ch-ua"] == '"Not:A-Brand";v="8", "Chromium";v="156", "Google Chrome";v="156"'
    assert h["sec-ch-ua-platform"] == '"Windows"' and h["sec-ch-ua-mobile"] == "?0"
    assert h["sec-ch-ua-full-version-list"].endswith(f'"Google Chrome";v="{VERSION}"')


def test_a_region_sets_locale_timezone_and_languages() -> None:
    fp = Fingerprint.generate("r", chrome_version=VERSION, region="de")
    assert (fp.locale, fp.timezone, fp.languages, fp.accept_language) == (
        "de-DE",
        "Europe/Berlin",
        ("de-DE", "de"),
        "de-DE,de;q=0.9",
    )


def test_host_coherent_identity_copies_what_workers_show() -> None:
    fp = Fingerprint.generate("h", chrome_version=VERSION, host=HOST)
    assert fp.host_coherent and fp.platform == "linux" and fp.brand == "Chromium"
    assert (fp.hardware_concurrency, fp.device_memory, fp.navigator_platform) == (
        6,
        16.0,
        "Linux x86_64",
    )
    assert fp.languages == ("en-US",)  # the browser's own (--accept-lang=en-US), not invented
    other = Fingerprint.generate("h", chrome_version=VERSION, host=HOST, platform="windows")
    assert not other.host_coherent and other.navigator_platform == "Win32"
    # No acceptLanguage override when the browser's languages already are the identity's.
    assert user_agent_override(fp, HOST)["acceptLanguage"] == ""
    assert user_agent_override(fp)["acceptLanguage"] == "en-US"


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="full version"):
        Fingerprint.generate("x", chrome_version="156")
    with pytest.raises(ValueError, match="platform must be one of"):
        Fingerprint.generate("x", chrome_version=VERSION, platform="beos")  # type: ignore[arg-type]


def test_context_options_and_launch_args() -> None:
    fp = Fingerprint.generate("o", chrome_version=VERSION, region="fr", platform="linux")
    opts = context_options(fp)
    assert opts["viewport"] == {"width": fp.viewport[0], "height": fp.viewport[1]}
    assert opts["screen"] == {"width": fp.screen[0], "height": fp.screen[1]}
    assert (
        opts["timezone_id"] == "Europe/Paris"
        and opts["device_scale_factor"] == fp.device_scale_factor
    )
    assert "user_agent" not in opts and "locale" not in opts  # set through CDP, see apply.py
    args = launch_args(fp)
    assert "--disable-blink-features=AutomationControlled" in args
    assert f"--user-agent={fp.user_agent}" in args and "--accept-lang=fr-FR" in args
    assert launch_args() == [
        "--disable-blink-features=AutomationControlled",
        "--window-size=1920,1080",
    ]
    if sys.platform.startswith("linux"):
        assert (
            f"--user-agent={Fingerprint.generate('o', chrome_version=VERSION).user_agent}"
            in launch_args(chrome_version=VERSION)
        )
