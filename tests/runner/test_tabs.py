"""New tabs and popups: ``opens: tab``, ``switch_tab``, ``close_tab``.

Real Chromium against pages served on 127.0.0.1: a popup is followed, read and closed and the run
goes on on its opener; a popup that closes itself hands the run back; a failure inside a popup
snapshots the popup; a popup to a host outside allowed_domains is refused before its request
leaves; a checkpoint taken in a popup resumes on the popup's URL; every page is closed with the
run's context.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from browserq.errors import BrowserqError
from browserq.execute.runtime import Runtime
from tests.conftest import make_settings, template
from tests.support.http import html_pages, serve_http

HEAD = '<html><head><link rel="icon" href="data:,"></head><body>'
PAGES = {
    "/opener": HEAD + '<div id="status">on the opener</div>'
    '<a id="pop" href="/popup" target="_blank">open</a>'
    '<a id="js" href="#" onclick="window.open(\'/popup?js\'); return false">js</a>'
    '<a id="nothing" href="#">nothing</a>'
    '<a id="foreign" href="#" target="_blank">foreign</a>'
    "<script>const to = new URLSearchParams(location.search).get('to');"
    "if (to) document.getElementById('foreign').href = to;</script></body></html>",
    "/popup": HEAD + '<div id="inpop">in the popup</div>'
    '<button id="closeme" onclick="window.close()">close</button></body></html>',
    "/gate2": HEAD + '<div id="gate">through</div></body></html>',
}


class _Pages(BaseHTTPRequestHandler):
    """The pages above; ``/gate1`` answers 403 (BLOCKED: the run is retried from its checkpoint)."""

    inner = html_pages(PAGES)

    def do_GET(self) -> None:
        if self.path.startswith("/gate1"):
            body = b"<html><body>blocked</body></html>"  # an empty 4xx body is a net error in Chromium
            self.send_response(403)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.inner.do_GET(self)  # type: ignore[arg-type]

    def log_message(self, *_args: object) -> None:
        return None


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_http(_Pages) as host:
        yield f"http://{host}"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """A runtime whose run-level retries come at once (the resume test)."""
    settings = make_settings(tmp_path_factory.mktemp("tabs"), run_retry_backoff_s=0.05)
    started = Runtime(settings).start()
    yield started
    started.stop()


@pytest.fixture()
def closed_pages(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> list[list[Any]]:
    """The pages of every context a run closes, read just before it is closed."""
    seen: list[list[Any]] = []
    original = runtime.pool.close_context

    async def close_context(context: Any) -> None:
        seen.append(list(context.pages))
        await original(context)

    monkeypatch.setattr(runtime.pool, "close_context", close_context)
    return seen


def _steps(runtime: Runtime, run_id: str) -> dict[str, Any]:
    return {s.step_id: s for s in runtime.store.steps.steps(run_id) if s.step_id}


def test_a_popup_is_followed_read_closed_and_the_run_goes_on_on_the_opener(
    runtime: Runtime, site: str, closed_pages: list[list[Any]]
) -> None:
    loaded = template(f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{id: pop, action: click, selector: "#pop", opens: tab}}
          - {{id: inpop, action: get, selector: "#inpop", into: inpop}}
          - {{id: where, action: get, what: url, into: popup_url}}
          - {{id: close, action: close_tab}}
          - {{id: status, action: get, selector: "#status", into: status}}
          - {{id: js, action: click, selector: "#js", opens: tab}}
          - {{id: back, action: switch_tab, to: opener}}
          - {{id: again, action: get, selector: "#status", into: again}}
          - {{id: by_url, action: switch_tab, to: "**/popup?js"}}
          - {{id: inpop2, action: get, selector: "#inpop", into: inpop2}}
          - {{id: first, action: switch_tab, to: 0}}
    """)
    outcome = runtime.run_loaded(loaded)
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert outcome.outputs == {
        "inpop": "in the popup", "popup_url": f"{site}/popup", "status": "on the opener",
        "again": "on the opener", "inpop2": "in the popup",
    }
    steps = _steps(runtime, outcome.run_id)
    assert steps["pop"].url_before == f"{site}/opener" and steps["pop"].url_after == f"{site}/popup"
    assert steps["close"].url_after == f"{site}/opener"
    assert steps["by_url"].url_after == f"{site}/popup?js"
    # Every page the run opened was closed with its context: the first page and the second popup
    # (the first popup was closed by close_tab already).
    assert len(closed_pages) == 1
    pages = closed_pages[0]
    assert [p.url for p in pages] == [f"{site}/opener", f"{site}/popup?js"]
    assert all(p.is_closed() for p in pages)


def test_without_opens_the_run_stays_on_the_opener(runtime: Runtime, site: str) -> None:
    """Today's behaviour is kept for templates that do not ask: the popup opens, the run stays."""
    loaded = template(f"""
        settings: {{trace: off, step_retries: 0}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{action: click, selector: "#pop"}}
          - {{id: inpop, action: get, selector: "#inpop", into: inpop, timeout_s: 2}}
    """)
    outcome = runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "SELECTOR_NOT_FOUND")


def test_a_popup_that_closes_itself_hands_the_run_back_to_its_opener(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{action: click, selector: "#pop", opens: tab}}
          - {{action: click, selector: "#closeme"}}
          - {{action: wait, ms: 300}}
          - {{id: status, action: get, selector: "#status", into: status}}
    """)
    outcome = runtime.run_loaded(loaded)
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert outcome.outputs == {"status": "on the opener"}


def test_switch_tab_to_a_page_that_is_not_open_names_the_open_pages(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off, step_retries: 0}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{id: nope, action: switch_tab, to: "**/elsewhere"}}
    """)
    outcome = runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "TAB_NOT_FOUND")
    assert "**/elsewhere" in outcome.error_message and f"0 {site}/opener (current)" in outcome.error_message


def test_close_tab_on_the_only_page_fails(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off, step_retries: 0}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{action: close_tab}}
    """)
    outcome = runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "TAB_NOT_FOUND")
    assert "only open page" in outcome.error_message


def test_opens_tab_when_nothing_opens_is_tab_not_opened(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off, step_retries: 0}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{action: click, selector: "#nothing", opens: tab, timeout_s: 2}}
    """)
    outcome = runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "TAB_NOT_OPENED")


def test_a_failure_inside_the_popup_snapshots_the_popup(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off, step_retries: 0}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{action: click, selector: "#pop", opens: tab}}
          - {{id: missing, action: click, selector: "#missing", timeout_s: 2}}
    """)
    outcome = runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "SELECTOR_NOT_FOUND")
    failing = _steps(runtime, outcome.run_id)["missing"]
    assert failing.url_after == f"{site}/popup"
    artifacts = {a.kind: a for a in runtime.store.steps.artifacts(outcome.run_id) if a.step_attempt_id == failing.id}
    assert {"failure_screenshot", "dom", "console", "network"} <= set(artifacts)
    dom = (Path(runtime.settings.artifacts_dir) / artifacts["dom"].path).read_text()
    assert "in the popup" in dom and "on the opener" not in dom


class _Counting(BaseHTTPRequestHandler):
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"hi")

    def log_message(self, *_args: object) -> None:
        return None


@pytest.fixture()
def foreign() -> Iterator[str]:
    """A server on another host (127.0.0.2) that counts what reaches it."""
    _Counting.requests = []
    server = ThreadingHTTPServer(("127.0.0.2", 0), _Counting)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.2:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_a_popup_to_a_host_outside_allowed_domains_is_refused(runtime: Runtime, site: str, foreign: str) -> None:
    loaded = template(f"""
        settings: {{trace: off, step_retries: 0, allowed_domains: ["127.0.0.1"]}}
        steps:
          - {{action: navigate, url: "{site}/opener?to={foreign}/stolen"}}
          - {{id: pop, action: click, selector: "#foreign", opens: tab, timeout_s: 5}}
    """)
    outcome = runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "DOMAIN_DENIED"), outcome.error_message
    assert f"{foreign}/stolen" in outcome.error_message
    assert _Counting.requests == []  # stopped before it was sent
    kinds = [a.kind for a in runtime.store.steps.artifacts(outcome.run_id)]
    assert "blocked_requests" in kinds


def test_a_checkpoint_in_a_popup_resumes_on_the_popups_url(runtime: Runtime, site: str) -> None:
    """The checkpoint keeps the current page's URL (and which tab it was); the resumed run opens
    that URL in its fresh context and goes on from there — its other page opened again at its
    URL, in its place (``switch_tab: 0`` finds the opener's page)."""
    loaded = template(f"""
        settings: {{trace: off, run_retries: 1, checkpoints: explicit}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{id: pop, action: click, selector: "#pop", opens: tab, checkpoint: true}}
          - {{id: gate, action: navigate, url: "{site}/gate${{run.attempt}}"}}
          - {{id: where, action: get, what: url, into: where}}
          - {{id: back, action: switch_tab, to: 0}}
          - {{id: first, action: get, what: url, into: first}}
    """)
    outcome = runtime.run_loaded(loaded)
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert outcome.outputs == {"where": f"{site}/gate2", "first": f"{site}/opener"}
    run = runtime.store.runs.get_run(outcome.run_id)
    assert run is not None and run.attempt == 2
    resumed = [s for s in runtime.store.steps.steps(outcome.run_id) if s.action == "resume"]
    assert [s.inputs["url"] for s in resumed] == [f"{site}/popup"]
    assert resumed[0].inputs["checkpoint"] == "1"
    assert resumed[0].url_after == f"{site}/popup"
    assert run.checkpoint is not None and run.checkpoint["path"] == "1"
    assert run.checkpoint["tab"] == {"index": 1, "open": 2}


@pytest.mark.parametrize(
    ("step", "problem"),
    [
        ("{action: click, selector: a, opens: window}", "steps[0].opens: invalid value 'window'"),
        ("{action: switch_tab, to: 're:(a'}", "switch_tab to: invalid regular expression"),
        ("{action: switch_tab, to: 99}", "tab index 99 is out of range"),
        ("{action: switch_tab, to: [1]}", "switch_tab to must be"),
        ("{action: switch_tab}", "to"),
        ("{action: close_tab, to: opener}", "to"),
    ],
)
def test_bad_tab_fields_are_refused_at_load(step: str, problem: str) -> None:
    with pytest.raises(BrowserqError) as caught:
        template(f"steps:\n  - {step}\n")
    assert problem in str(caught.value)


def test_a_bad_url_pattern_built_from_params_is_refused_by_the_producer() -> None:
    from browserq.errors import ParamError
    from browserq.execute.accept import prepare_loaded

    loaded = template('params:\n  p: {type: string}\nsteps:\n  - {action: switch_tab, to: "re:${p}"}\n')
    with pytest.raises(ParamError, match=r"\(switch_tab\) to: 're:\$\{p\}' gives invalid regular expression"):
        prepare_loaded(loaded, {"p": "(a"}, max_params_bytes=1 << 20)


def test_list_tabs_lists_the_open_pages_oldest_first_and_the_current_one(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{action: list_tabs, into: alone}}
          - {{action: click, selector: "#pop", opens: tab}}
          - {{action: list_tabs, into: both}}
        """)
    outcome = runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["alone"] == [{"index": 0, "url": f"{site}/opener", "title": "", "current": True}]
    assert [(t["index"], t["url"], t["current"]) for t in outcome.outputs["both"]] == [
        (0, f"{site}/opener", False), (1, f"{site}/popup", True)]


def test_new_tab_opens_a_page_at_a_url_and_close_tab_goes_back(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off, allowed_domains: ["127.0.0.1"]}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{action: new_tab, url: "{site}/popup", into: opened}}
          - {{action: get, selector: "#inpop", into: inpop}}
          - {{action: new_tab, into: blank}}
          - {{action: list_tabs, into: tabs}}
          - {{action: close_tab}}
          - {{action: close_tab}}
          - {{action: get, selector: "#status", into: status}}
        """)
    outcome = runtime.run_loaded(loaded)
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert outcome.outputs["opened"] == {"index": 1, "status": 200, "url": f"{site}/popup"}
    assert outcome.outputs["blank"] == {"index": 2, "status": None, "url": "about:blank"}
    assert outcome.outputs["inpop"] == "in the popup" and outcome.outputs["status"] == "on the opener"
    assert [(t["url"], t["current"]) for t in outcome.outputs["tabs"]] == [
        (f"{site}/opener", False), (f"{site}/popup", False), ("about:blank", True)]


def test_new_tab_outside_allowed_domains_is_refused_before_a_page_opens(
        runtime: Runtime, site: str, foreign: str) -> None:
    loaded = template(f"""
        settings: {{trace: off, step_retries: 0, allowed_domains: ["127.0.0.1"]}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - {{action: new_tab, url: "${{to}}"}}
        params:
          to: {{type: string}}
        """)
    outcome = runtime.run_loaded(loaded, {"to": f"{foreign}/stolen"})
    assert (outcome.status, outcome.error_code) == ("failed", "DOMAIN_DENIED"), outcome.error_message
    assert _Counting.requests == []


def test_new_tab_with_a_literal_url_outside_allowed_domains_is_refused_at_load() -> None:
    with pytest.raises(BrowserqError, match=r"steps\[0\]\.url"):
        template('settings: {allowed_domains: ["127.0.0.1"]}\nsteps:\n  - {action: new_tab, url: "http://127.0.0.2/x"}\n')


def test_new_tab_past_the_open_pages_cap_is_tab_not_opened(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off, step_retries: 0}}
        steps:
          - {{action: navigate, url: "{site}/opener"}}
          - repeat: {{max: 19, steps: [{{action: new_tab}}]}}
          - {{action: list_tabs, into: tabs}}
          - {{id: one_more, action: new_tab}}
        """)
    outcome = runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "TAB_NOT_OPENED"), outcome.error_message
    assert "the run has 20 pages open" in outcome.error_message
