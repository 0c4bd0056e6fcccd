"""BROWSERQ_BROWSER: the headless shell as a second engine, found like Chromium is, and its errors.

Real launches: Debian's ``chromium-headless-shell`` (scripts/bootstrap.sh installs it), and
Playwright's own download layout, which these tests build from links to the system binaries
(there is no network here to ``playwright install``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import structlog.testing

from browserq import engines
from browserq.browsers.errors import BrowserLaunchFailed
from browserq.browsers.launcher import find_browser_pid, launch_chromium
from browserq.errors import ConfigError
from browserq.execute.runtime import Runtime
from tests.browsers.conftest import Driver
from tests.conftest import make_settings, template

SYSTEM_SHELL = engines.find_system(engines.HEADLESS_SHELL)
SYSTEM_CHROMIUM = engines.find_system(engines.CHROMIUM)
needs_shell = pytest.mark.skipif(SYSTEM_SHELL is None, reason="apt-get install chromium-headless-shell")


#: The program each engine's browser process runs (Debian's /usr/bin names are shell wrappers).
PROGRAM = {engines.CHROMIUM: "chromium", engines.HEADLESS_SHELL: "chromium-headless-shell"}


def _program(pid: int | None) -> str:
    """The file name of the program process ``pid`` runs."""
    assert pid is not None, "the browser process was not found"
    return Path(os.path.realpath(f"/proc/{pid}/exe")).name


def _hide_system_binaries(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """As on a machine without the Debian packages: no candidate exists, nothing on $PATH."""
    monkeypatch.setattr(engines, "CHROMIUM_CANDIDATES", (str(tmp_path / "none"),))
    monkeypatch.setattr(engines, "HEADLESS_SHELL_CANDIDATES", (str(tmp_path / "none"),))
    monkeypatch.setattr(shutil, "which", lambda _name: None)


def _playwright_registry(tmp_path: Path) -> Path:
    """A ``PLAYWRIGHT_BROWSERS_PATH`` laid out as ``playwright install chromium
    chromium-headless-shell`` leaves it, its executables links to the system binaries."""
    import playwright

    listed = Path(playwright.__file__).parent / "driver" / "package" / "browsers.json"
    revisions = {b["name"]: b["revision"] for b in json.loads(listed.read_text())["browsers"]}
    root = tmp_path / "ms-playwright"
    for name, (prefix, inside) in engines._PLAYWRIGHT_BUILDS.items():
        system = Path(f"/usr/lib/chromium/{PROGRAM[name]}")  # the binary, not the wrapper
        assert system.exists()
        target = root / f"{prefix}{revisions['chromium' if name == engines.CHROMIUM else 'chromium-headless-shell']}"
        executable = target.joinpath(*inside)
        executable.parent.mkdir(parents=True)
        executable.symlink_to(system)
    return root


# --- settings -------------------------------------------------------------------------------------
def test_the_engine_setting_names_its_choices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BROWSERQ_BROWSER")  # the suite's own engine (tests/support/isolation.py)
    assert make_settings(tmp_path).browser == "chromium"
    assert make_settings(tmp_path, browser="Headless_Shell").browser == "headless-shell"
    with pytest.raises(ConfigError) as caught:
        make_settings(tmp_path, browser="firefox")
    assert "BROWSERQ_BROWSER" in str(caught.value) and "chromium, headless-shell" in str(caught.value)


def test_headful_headless_shell_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        make_settings(tmp_path, browser="headless-shell", headless=False)
    text = str(caught.value)
    assert "headless only" in text and "BROWSERQ_HEADLESS=true" in text and "BROWSERQ_BROWSER=chromium" in text


def test_an_explicit_shell_path_must_exist(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, browser="headless-shell", headless_shell_path=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="BROWSERQ_HEADLESS_SHELL_PATH="):
        settings.resolve_chromium()
    # BROWSERQ_CHROMIUM_PATH is the full browser's: it does not make the shell's choice
    elsewhere = make_settings(tmp_path, chromium_path=str(tmp_path / "nope"), browser="headless-shell")
    assert elsewhere.resolve_chromium() == SYSTEM_SHELL or SYSTEM_SHELL is None


def test_a_shell_found_nowhere_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, driver: Driver
) -> None:
    _hide_system_binaries(monkeypatch, tmp_path)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "empty"))
    settings = make_settings(tmp_path, browser="headless-shell")
    with pytest.raises(ConfigError) as caught:
        settings.resolve_chromium()
    for hint in ("apt-get install chromium-headless-shell", "playwright install chromium-headless-shell",
                 "BROWSERQ_HEADLESS_SHELL_PATH"):
        assert hint in str(caught.value)
    with pytest.raises(BrowserLaunchFailed) as launch:  # a worker's launch says the same
        driver.run(launch_chromium(driver.playwright, settings))
    assert "apt-get install chromium-headless-shell" in str(launch.value)


# --- launching --------------------------------------------------------------------------------------
@needs_shell
def test_the_system_shell_is_found_and_launched(tmp_path: Path, driver: Driver) -> None:
    settings = make_settings(tmp_path, browser="headless-shell")
    assert settings.resolve_chromium() == SYSTEM_SHELL
    browser, marker = driver.run(launch_chromium(driver.playwright, settings))
    try:
        assert _program(find_browser_pid(marker)) == PROGRAM[engines.HEADLESS_SHELL]
    finally:
        driver.run(browser.close())


@needs_shell
@pytest.mark.skipif(not Path("/usr/lib/chromium/chromium").exists(), reason="no Debian Chromium to link")
@pytest.mark.parametrize("engine", [engines.CHROMIUM, engines.HEADLESS_SHELL])
def test_playwrights_download_runs_the_chosen_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, driver: Driver, engine: str
) -> None:
    """Without system packages each engine is Playwright's build of it: headless, Playwright picks
    its shell unless asked for the full build, so BROWSERQ_BROWSER=chromium must ask."""
    _hide_system_binaries(monkeypatch, tmp_path)
    registry = _playwright_registry(tmp_path)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(registry))
    settings = make_settings(tmp_path, browser=engine)
    assert settings.resolve_chromium() is None  # Playwright's own
    assert engines.playwright_download(engine) is not None
    local = Driver()  # a driver started with this registry in its environment
    try:
        browser, marker = local.run(launch_chromium(local.playwright, settings))
        try:
            assert _program(find_browser_pid(marker)) == PROGRAM[engine]
        finally:
            local.run(browser.close())
    finally:
        local.run(local.playwright.stop())
        local.loop.stop()


# --- a real run ---------------------------------------------------------------------------------------
@needs_shell
def test_a_template_run_completes_on_the_headless_shell(tmp_path: Path, demo) -> None:
    """navigate, fill, click, extract on the demo site, stealth on (the default), in the shell."""
    loaded = template(
        f"""
        settings: {{trace: off, step_retries: 0}}
        steps:
          - {{action: navigate, url: "{demo.url}/login"}}
          - {{action: fill, selector: "#username", value: demo}}
          - {{action: fill, selector: "#password", value: "{demo_password()}"}}
          - {{action: click, selector: "button[type=submit]"}}
          - {{action: assert, selector: "#welcome", exists: true}}
          - {{action: navigate, url: "{demo.url}/quotes/"}}
          - action: extract
            selector: .quote
            fields: {{text: .text, author: .author}}
            into: quotes
          - {{action: click, selector: "li.next a"}}
          - {{action: get, what: text, selector: ".quote .author", into: next_author}}
        """
    )
    settings = make_settings(tmp_path, browser="headless-shell")
    with Runtime(settings) as runtime:
        outcome = runtime.run_loaded(loaded)
        assert outcome.status == "completed", outcome
        browsers = runtime.pool._instances()
        assert browsers and all(_program(i.pid) == PROGRAM[engines.HEADLESS_SHELL] for i in browsers)
    quotes = outcome.outputs["quotes"]
    assert len(quotes) == 10 and all(q["text"] and q["author"] for q in quotes)
    assert outcome.outputs["next_author"] and outcome.outputs["next_author"] != quotes[0]["author"]


def demo_password() -> str:
    from browserq.demo.site import DEMO_PASSWORD

    return DEMO_PASSWORD


@needs_shell
def test_a_guarded_run_on_the_shell_does_not_wait_for_a_settings_page_it_has_not(tmp_path: Path, demo) -> None:
    """The shell has no chrome://settings to turn network prediction off in (nor predicts: its
    egress is tests/browsers/test_egress_paths.py's, run on the shell): the guard does not try.
    It tried once, for 15 s, on every browser's first guarded run, and warned."""
    loaded = template(
        f"""
        settings: {{trace: off, step_retries: 0, allowed_domains: ["127.0.0.1"]}}
        steps:
          - {{action: navigate, url: "{demo.url}/quotes/"}}
          - {{action: get, what: title, into: title}}
        """
    )
    with structlog.testing.capture_logs() as logs, Runtime(make_settings(tmp_path, browser="headless-shell")) as runtime:
        outcome = runtime.run_loaded(loaded)
        guards = [i.guard for i in runtime.pool._instances() if i.guard is not None]
    assert outcome.status == "completed" and outcome.outputs["title"], outcome
    assert guards and all(g.guarded_contexts == 0 for g in guards)  # the run was guarded, and let go
    assert not [e for e in logs if "network prediction" in e["event"]], logs
    assert not engines.has_settings_page(engines.HEADLESS_SHELL) and engines.has_settings_page(engines.CHROMIUM)
