"""Popups a click opens without ``opens: tab`` (issue 22, item 17), real Chromium on pages served
here: ``switch_tab: {to: last}`` right after a click that calls ``window.open`` is that popup; a
page opening hundreds of popups keeps at most ``MAX_OPEN_PAGES`` open (the rest closed and
recorded) and its step fails on its own timeout; a page whose script loops forever after the
click fails ``TIMEOUT``, as the README promises."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from browserq.execute.runtime import Runtime
from browserq.runner.tabs import MAX_OPEN_PAGES
from tests.conftest import make_settings, template
from tests.support.http import serve_http

HEAD = '<html><head><link rel="icon" href="data:,"></head><body>'
OPENER = (
    HEAD + '<div id="status">on the opener</div>'
    '<a id="js" href="#" onclick="window.open(\'/popup\'); return false">js</a>'
    '<a id="many" href="#" onclick="for (let i = 0; i < 300; i++) window.open(\'/popup?\' + i); return false">many</a>'
    '<a id="busy" href="#" onclick="setTimeout(() => { while (true) {} }, 0); return false">busy</a></body></html>'
)
POPUP = HEAD + '<div id="inpop">in the popup</div></body></html>'


class _Site(BaseHTTPRequestHandler):
    """The opener, and a popup whose answer takes a moment (a real site's does)."""

    popup_answered = threading.Event()

    def do_GET(self) -> None:
        body = (POPUP if self.path.startswith("/popup") else OPENER).encode()
        if self.path == "/popup":
            threading.Event().wait(0.5)  # the popup's server is slower than the next step
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        return None


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_http(_Site) as host:
        yield f"http://{host}"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    started = Runtime(make_settings(tmp_path_factory.mktemp("popups"))).start()
    yield started
    started.stop()


def test_switch_tab_to_last_right_after_a_window_open_click_is_the_popup(
    runtime: Runtime, site: str
) -> None:
    loaded = template(f"""
        settings: {{trace: off, step_retries: 0}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{action: click, selector: "#js"}}
          - {{action: switch_tab, to: last}}
          - {{action: get, selector: "#inpop", into: inpop, timeout_s: 3}}
    """)
    for _ in range(3):
        outcome = runtime.run_loaded(loaded)
        assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
        assert outcome.outputs == {"inpop": "in the popup"}


def test_a_page_opening_hundreds_of_popups_keeps_at_most_the_cap_and_its_step_times_out(
    runtime: Runtime, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[Any]] = []
    original = runtime.pool.close_context

    async def close_context(context: Any) -> None:
        seen.append([p.url for p in context.pages if not p.is_closed()])
        await original(context)

    monkeypatch.setattr(runtime.pool, "close_context", close_context)
    loaded = template(f"""
        settings: {{trace: off, step_retries: 0, timeout_s: 120}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{action: click, selector: "#many", timeout_s: 5}}
    """)
    outcome = runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code, outcome.error_step_path) == (
        "failed",
        "TIMEOUT",
        "1",
    ), outcome
    closed = [w for w in outcome.warnings if w["code"] == "PAGES_CLOSED"]
    assert closed and closed[0]["step"] == "1", outcome.warnings
    assert f"beyond the {MAX_OPEN_PAGES} a run keeps open" in closed[0]["message"]
    # The run kept at most the cap; a page arriving while the context closes goes with it.
    assert len(seen) == 1 and len(seen[0]) < 2 * MAX_OPEN_PAGES, len(seen[0])


def test_a_script_that_loops_forever_after_the_click_is_a_timeout(
    runtime: Runtime, site: str
) -> None:
    loaded = template(f"""
        settings: {{trace: off, step_retries: 0}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{action: click, selector: "#busy", timeout_s: 3}}
          - {{action: click, selector: "#status", timeout_s: 3}}
    """)
    outcome = runtime.run_loaded(loaded)
    # The loop starts right after the click's handler: the click itself or the next step meets it.
    assert (outcome.status, outcome.error_code) == ("failed", "TIMEOUT"), outcome
    assert outcome.error_step_path in ("1", "2")
