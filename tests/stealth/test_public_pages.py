"""Public detection pages, unchanged (tests/stealth/public/), served on 127.0.0.1: a plain headless
context is flagged by them, a stealth identity by none of their tests."""

from __future__ import annotations

import functools
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

from browserq import stealth
from browserq.redact import Redactor
from browserq.runner.dialogs import DialogAnswerer
from tests.stealth.conftest import launched, run, stealth_context
from tests.support.http import serve_http

PUBLIC = Path(__file__).parent / "public"


class QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


async def _detect_headless_verdicts(page: Any, host_port: str) -> dict[str, str]:
    """infosimples/detect-headless: each row ends with class headless, headful or undefined."""
    await page.goto(f"http://{host_port}/index.html")
    await page.locator("tr#webdriver.headful, tr#webdriver.headless").wait_for(timeout=10_000)
    for step in range(60):  # its mouse test wants 50 events with real movement
        await page.mouse.move(100 + 7 * step, 120 + 3 * (step % 9))
    await page.locator("tr#mouse-move.headful, tr#mouse-move.headless").wait_for(timeout=10_000)
    rows = await page.locator("tr[id]").all()
    verdicts = {}
    for row in rows:
        classes = (await row.get_attribute("class") or "").split()
        verdicts[await row.get_attribute("id") or "?"] = next(
            (c for c in classes if c in ("headless", "headful", "undefined")), "none"
        )
    return verdicts


def test_infosimples_detect_headless_flags_plain_headless_and_no_stealth_identity() -> None:
    handler = functools.partial(QuietFiles, directory=str(PUBLIC / "detect-headless"))

    async def go() -> tuple[dict[str, str], dict[str, str]]:
        with serve_http(handler) as host_port:  # type: ignore[arg-type]
            async with launched() as browser:
                plain = await (await browser.new_context()).new_page()
                before = await _detect_headless_verdicts(plain, host_port)
            async with launched(stealth_pool=True) as browser:
                host = await stealth.probe_host(browser)
                fp = stealth.Fingerprint.generate("public-pages", chrome_version=host.chrome_version, host=host)
                context = await stealth_context(browser, fp, host)
                DialogAnswerer(context, "dismiss", Redactor(), human=True)  # a run with human_input
                page = await stealth.new_page(context)
                after = await _detect_headless_verdicts(page, host_port)
        return before, after

    before, after = run(go)
    assert len(after) == 16, after
    assert {"user-agent", "app-version"} <= {test for test, verdict in before.items() if verdict == "headless"}, before
    assert not [test for test, verdict in after.items() if verdict == "headless"], after
    # what it can tell: everything but its broken-image test (which never reports: a bug of the page)
    assert {test for test, verdict in after.items() if verdict != "headful"} == {"image"}, after
