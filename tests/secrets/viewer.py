"""Open a trace in Playwright's own trace viewer and print what it shows (run as a subprocess).

``python -m tests.secrets.viewer TRACE.zip [TEXT …]`` serves the trace with ``playwright
show-trace``, loads the viewer in headless Chromium, waits until each TEXT is shown and prints
the text of the viewer page (its action list); it fails if the viewer cannot load the zip.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from browserq.settings import load_settings


def viewer_text(trace: Path, expected: list[str]) -> str:
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("playwright")), "show-trace", "--host", "127.0.0.1", "--port", "0", str(trace)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # the playwright wrapper starts node: stop both, or node is orphaned
    )
    try:
        assert server.stdout is not None
        line = ""
        while "http" not in line:
            line = server.stdout.readline()
            if not line and server.poll() is not None:
                raise RuntimeError("playwright show-trace exited")
        url = re.search(r"http://\S+", line).group(0)  # type: ignore[union-attr]
        with sync_playwright() as p:
            settings = load_settings()
            browser = p.chromium.launch(executable_path=settings.resolve_chromium(), args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(url)
            for text in ["Actions", *expected]:  # the viewer renders the action list when loaded
                page.get_by_text(text).first.wait_for(timeout=60_000)
            text = page.inner_text("body")
            browser.close()
            return text
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(10)


if __name__ == "__main__":
    print(viewer_text(Path(sys.argv[1]), sys.argv[2:]))
