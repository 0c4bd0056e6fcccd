"""Launch flags: one value per list switch, Playwright's defaults kept, the hidden UI renderer gone.

The real-browser tests read what Chromium was started with from /proc and which renderers it
runs: a newer Chromium that renames the omnibox features, or a newer Playwright that adds a
default, fails here instead of silently costing CPU or re-enabling what Playwright disables.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from browserq.browsers import flags
from browserq.browsers.launcher import find_browser_pid, launch_chromium
from browserq.demo.site import DemoSite
from tests.browsers.conftest import Driver
from tests.conftest import make_settings


@pytest.fixture(autouse=True)
def _forget_learned_defaults() -> Iterator[None]:
    yield
    flags._learned_defaults.clear()


def _switch(args: list[str], name: str) -> list[str]:
    values = [a.partition("=")[2] for a in args if a.partition("=")[0] == name]
    assert len(values) == 1, f"{name} appears {len(values)} times in {args}"
    return values[0].split(",")


def test_every_list_switch_is_emitted_once_with_playwrights_defaults_and_the_users() -> None:
    args = flags.tuned_args(
        ["--foo", "--disable-features=Translate", "--disable-blink-features=AutomationControlled",
         "--disable-features=Translate,MyFeature"],
        headless=True,
    )
    disabled = _switch(args, "--disable-features")
    assert set(flags.PLAYWRIGHT_FEATURE_DEFAULTS["--disable-features"]) <= set(disabled)
    assert set(flags.BROWSERQ_DISABLED_FEATURES) <= set(disabled)
    assert disabled.count("Translate") == 1 and "MyFeature" in disabled
    assert _switch(args, "--disable-blink-features") == ["AutomationControlled"]
    assert "--foo" in args and "--disable-gpu" in args
    # Merged switches come last: that is the occurrence Chromium reads.
    assert args[-1].startswith("--disable-blink-features=") or args[-1].startswith("--disable-features=")


def test_a_feature_the_user_enables_is_not_also_disabled() -> None:
    args = flags.tuned_args(["--enable-features=PaintHolding,Other"], headless=True)
    assert "PaintHolding" not in _switch(args, "--disable-features")
    enabled = _switch(args, "--enable-features")
    # Playwright's own enables survive the user's switch, which would otherwise replace them.
    assert set(flags.PLAYWRIGHT_FEATURE_DEFAULTS["--enable-features"]) | {"PaintHolding", "Other"} == set(enabled)


def test_a_switch_only_playwright_sets_is_left_to_playwright() -> None:
    args = flags.tuned_args([], headless=False)
    assert not any(a.startswith("--enable-features") for a in args)
    assert "--disable-gpu" not in args  # a headed browser keeps its GPU


def test_a_default_the_mirror_lacks_is_found_on_the_command_line_and_learned() -> None:
    cmdline = ["chromium", "--disable-features=NewDefault,HttpsUpgrades", "--enable-features=Mine",
               "--disable-features=HttpsUpgrades,Mine"]
    dropped = flags.dropped_defaults(cmdline)
    assert dropped == {"--disable-features": ["NewDefault"]}
    flags.learn_defaults(dropped)
    assert "NewDefault" in _switch(flags.tuned_args([], headless=True), "--disable-features")


def test_the_launched_browser_reads_one_feature_list_holding_playwrights_defaults(
    driver: Driver, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, chromium_args=["--disable-features=MyFeature"])
    browser, marker = driver.run(launch_chromium(driver.playwright, settings))
    try:
        pid = find_browser_pid(marker)
        assert pid is not None
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        occurrences = [a.partition("=")[2].split(",") for a in cmdline if a.startswith("--disable-features=")]
        assert len(occurrences) == 2  # Playwright's, then ours (the one Chromium keeps)
        assert set(occurrences[0]) <= set(occurrences[1]), set(occurrences[0]) - set(occurrences[1])
        assert {"MyFeature", *flags.BROWSERQ_DISABLED_FEATURES} <= set(occurrences[1])
        assert flags.dropped_defaults(cmdline) == {}
    finally:
        driver.run(browser.close())


@pytest.mark.full_chromium  # the full browser's renderers and WebUI
def test_a_page_runs_in_one_renderer_without_the_hidden_omnibox_webui(driver: Driver, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    browser, marker = driver.run(launch_chromium(driver.playwright, settings))
    try:
        with DemoSite() as site:

            async def visit() -> None:
                context = await browser.new_context()
                page = await context.new_page()
                await page.goto(f"{site.url}/quotes/")
                await page.click("li.next a")
                await page.wait_for_url("**/page/2/")

            driver.run(visit())
            renderers = _renderers_of(marker)
        assert not [a for a in renderers if b"--top-chrome-webui" in a], "the omnibox popup WebUI renderer is back"
        assert len(renderers) == 1, f"{len(renderers)} renderers for one page (a spare renderer?)"
    finally:
        driver.run(browser.close())


def _renderers_of(marker: str) -> list[bytes]:
    """Renderer command lines of one browser, matched by its profile dir (the zygote re-parents
    them, and they rewrite their command line into one space-separated string)."""
    browser_pid = find_browser_pid(marker)
    assert browser_pid is not None
    argv = Path(f"/proc/{browser_pid}/cmdline").read_bytes().split(b"\0")
    profile = next(a for a in argv if a.startswith(b"--user-data-dir="))
    found = []
    for proc in Path("/proc").iterdir():
        try:
            other = (proc / "cmdline").read_bytes() if proc.name.isdigit() else b""
        except OSError:
            continue
        if b"--type=renderer" in other and profile in other:
            found.append(other)
    return found


def test_the_launcher_warns_once_about_a_default_it_did_not_know(
    driver: Driver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = flags.PLAYWRIGHT_FEATURE_DEFAULTS["--disable-features"]
    monkeypatch.setitem(flags.PLAYWRIGHT_FEATURE_DEFAULTS, "--disable-features", known[1:])
    settings = make_settings(tmp_path)
    with structlog.testing.capture_logs() as logs:
        first, _ = driver.run(launch_chromium(driver.playwright, settings))
        driver.run(first.close())
        second, _ = driver.run(launch_chromium(driver.playwright, settings))
        driver.run(second.close())
    warnings = [e for e in logs if e["event"] == "chromium_feature_defaults_dropped"]
    assert len(warnings) == 1, warnings
    assert warnings[0]["dropped"] == {"--disable-features": [known[0]]}
    assert "browserq/browsers/flags.py" in warnings[0]["hint"]
