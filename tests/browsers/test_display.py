"""Headful Chromium on a virtual display (BROWSERQ_HEADLESS=false with no DISPLAY): browserq starts
Xvfb itself, the browser is the real one (no HeadlessChrome, no --user-agent, full client hints),
and the display goes away with the process; without Xvfb the error says what to install.
Each case runs in a subprocess: the display is per process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.full_chromium  # headful: the headless shell has no headful mode

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import asyncio, json, os
from browserq.browsers import display
from browserq.browsers.api import async_playwright
from browserq.browsers.launcher import launch_chromium
from browserq.settings import load_settings

async def main():
    async with async_playwright() as pw:
        browser, _ = await launch_chromium(pw, load_settings(database_url="sqlite://"))
        page = await (await browser.new_context()).new_page()
        await page.route("https://hints.invalid/", lambda r: r.fulfill(body="<html></html>", content_type="text/html"))
        await page.goto("https://hints.invalid/")
        facts = await page.evaluate('''async () => ({ua: navigator.userAgent, webdriver: navigator.webdriver,
            arch: (await navigator.userAgentData.getHighEntropyValues(['architecture'])).architecture})''')
        await browser.close()
    facts["xvfb_pid"] = display._xvfb.pid if display._xvfb else None
    facts["display"] = display._display
    print(json.dumps(facts))

asyncio.run(main())
"""


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in env.items() if k != "DISPLAY"}
    return subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env={**env, "BROWSERQ_HEADLESS": "false"},
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is installed by scripts/bootstrap.sh")
def test_headful_without_a_display_runs_on_an_xvfb_that_ends_with_the_process() -> None:
    done = _run(dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts["display"].startswith(":") and facts["xvfb_pid"]
    assert "HeadlessChrome" not in facts["ua"] and facts["webdriver"] is False
    assert facts["arch"] == "x86" or facts["arch"] == "arm"  # Chrome's own hints, not blanked
    assert not Path(f"/proc/{facts['xvfb_pid']}").exists() or "Xvfb" not in Path(f"/proc/{facts['xvfb_pid']}/cmdline").read_text()


def test_headful_without_a_display_or_xvfb_says_what_to_install(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    done = _run({**os.environ, "PATH": str(bare)})
    assert done.returncode != 0
    assert "BROWSERQ_HEADLESS=false needs a display: set DISPLAY, or install Xvfb (Debian/Ubuntu: apt install xvfb)" in done.stderr
