"""The step loop: repeat bounds, nesting and stop conditions, through the real runner."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from browserq.execute.runtime import Runtime
from tests.conftest import template
from tests.support.http import serve_http


def test_repeat_bound_stops_early_and_nests(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        steps:
          - action: navigate
            url: "%s/quotes/"
          - repeat:
              max: 2
              steps:
                - repeat:
                    max: 3
                    steps:
                      - action: click
                        selector: "#nothing"
                        optional: true
                - action: extract
                  selector: ".quote .author"
                  into: authors
                - action: click
                  selector: "li.next a"
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert len(outcome.outputs["authors"]) == 20
    paths = {s.step_path for s in any_runtime.store.steps.steps(outcome.run_id)}
    assert {"1[1].0[3].0", "1[2].0[1].0", "1[2].2"} <= paths
    assert demo.hits("/quotes/page/3/") == 1


class LateNextPages(BaseHTTPRequestHandler):
    """Pages /p/1../p/3 whose "next" link arrives in a second part of the document, a moment
    after the first (the last page has none). Page 1's moment is long enough to outlast the
    navigate step's own bookkeeping: its first check meets a document still loading."""

    def do_GET(self) -> None:
        number = int(self.path.rsplit("/", 1)[-1]) if self.path.startswith("/p/") else 0
        self.send_response(200 if number else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        if not number:
            return
        self.wfile.write(f"<!doctype html><html><body><p class='item'>page {number}</p>".encode() + b" " * 4096)
        self.wfile.flush()
        time.sleep(2.0 if number == 1 else 0.3)  # not an assert: the rest comes later, as on a slow site
        tail = f"<a class='next' href='/p/{number + 1}'>next</a>" if number < 3 else ""
        self.wfile.write(f"{tail}</body></html>".encode())

    def log_message(self, format: str, *args: Any) -> None:
        return None


def test_until_missing_and_optional_wait_for_a_page_still_loading(sqlite_runtime: Runtime) -> None:
    with serve_http(LateNextPages) as host:
        loaded = template(
            """
            steps:
              - {action: navigate, url: "http://%s/p/1", wait_until: commit}
              - repeat:
                  max: 5
                  until_missing: "a.next"
                  steps:
                    - {action: extract, selector: ".item", into: items}
                    - {action: click, selector: "a.next", optional: true}
            """
            % host
        )
        outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    # The first check ran on a document still loading: judged "missing" it would end after page 1.
    assert outcome.outputs["items"] == ["page 1", "page 2", "page 3"]
    assert outcome.warnings == []  # stopped by until_missing on page 3, not by max
    clicks = [(s.step_path, s.status) for s in sqlite_runtime.store.steps.steps(outcome.run_id) if s.step_path.endswith(".1")]
    assert clicks == [("1[1].1", "succeeded"), ("1[2].1", "succeeded"), ("1[3].1", "skipped")]
