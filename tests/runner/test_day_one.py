"""What a new user trips over on day one: get's default, type appending, into: on every action
with a result, and limits that cut a result short (warnings instead of a silent "completed")."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from browserq.actions import notices
from browserq.execute.runtime import Runtime
from browserq.runner.checkpoint import Checkpoint
from browserq.secrets import SecretBox
from tests.conftest import TEST_SECRET_KEY, template

#: Fields that already hold text when the page loads (the caret starts at 0 in each of them).
PREFILLED = """<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>Prefilled</title></head><body>
<input id="text" value="pre-">
<input id="email" type="email" value="me@">
<textarea id="area">line one
pre-</textarea>
<div id="editable" contenteditable="true">pre-</div>
<iframe id="frame" srcdoc='<input id="inner" value="pre-">'></iframe>
</body></html>"""


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PREFILLED.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        return None


@pytest.fixture(scope="module")
def prefilled_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


# --- get ---------------------------------------------------------------------------------------
def test_get_with_a_selector_and_no_what_reads_the_text(sqlite_runtime: Runtime, demo) -> None:
    loaded = template(
        f"""
        steps:
          - {{action: navigate, url: "{demo.url}/quotes/"}}
          - {{action: get, selector: ".quote .author", into: first_author}}
        """
    )
    step = loaded.template.steps[1]
    assert step.what == "text"  # type: ignore[union-attr]
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["first_author"] == "Albert Einstein"


def test_get_without_selector_or_what_says_what_is_missing() -> None:
    from browserq.errors import TemplateInvalid

    with pytest.raises(TemplateInvalid) as caught:
        template("steps:\n  - {action: get, into: x}\n")
    assert "needs a selector (what defaults to text)" in str(caught.value)


# --- type --------------------------------------------------------------------------------------
@pytest.mark.parametrize("human", [False, True], ids=["keyboard", "human_input"])
def test_type_appends_after_what_the_field_holds(sqlite_runtime: Runtime, prefilled_url: str, human: bool) -> None:
    loaded = template(
        f"""
        settings: {{human_input: {str(human).lower()}}}
        steps:
          - {{action: navigate, url: "{prefilled_url}"}}
          - {{action: type, selector: "#text", text: "abc"}}
          - {{action: type, selector: "#email", text: "x.org"}}
          - {{action: type, selector: "#area", text: "abc"}}
          - {{action: type, selector: "#editable", text: "abc"}}
          - {{action: type, selector: "iframe#frame >>> #inner", text: "abc"}}
          - {{action: get, what: value, selector: "#text", into: text}}
          - {{action: get, what: value, selector: "#email", into: email}}
          - {{action: get, what: value, selector: "#area", into: area}}
          - {{action: get, selector: "#editable", into: editable}}
          - {{action: get, what: value, selector: "iframe#frame >>> #inner", into: inner}}
          - {{action: fill, selector: "#text", value: "new"}}
          - {{action: get, what: value, selector: "#text", into: filled}}
        """
    )
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    out = outcome.outputs
    assert out["text"] == "pre-abc"
    assert out["email"] == "me@x.org"  # no selection API on type=email: End moves the caret
    assert out["area"] == "line one\npre-abc"
    assert out["editable"] == "pre-abc"
    assert out["inner"] == "pre-abc"
    assert out["filled"] == "new"  # fill still replaces


# --- into: on navigate, select, scroll, screenshot -------------------------------------------
def test_navigate_select_scroll_and_screenshot_store_into(sqlite_runtime: Runtime, demo) -> None:
    loaded = template(
        f"""
        steps:
          - {{action: navigate, url: "{demo.url}/account", into: landed}}
          - {{action: navigate, url: "{demo.url}/widgets", into: widgets}}
          - {{action: select, selector: "#color", value: "green", into: color}}
          - {{action: select, selector: "#color", value: "Blue", by: label, into: by_label}}
          - {{action: scroll, to: bottom, settle_ms: 0, into: scrolled}}
          - {{action: screenshot, name: "shot.png", into: shot}}
          - {{action: get, what: url, into: url}}
          - {{action: navigate, url: "${{outputs.widgets.url}}"}}
        """
    )
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    out = outcome.outputs
    assert out["landed"] == {"status": 200, "url": f"{demo.url}/login"}  # the URL after redirects
    assert out["widgets"] == {"status": 200, "url": f"{demo.url}/widgets"}
    assert out["color"] == ["green"] and out["by_label"] == ["blue"]
    assert set(out["scrolled"]) == {"height", "grew"} and out["scrolled"]["height"] > 0
    assert out["shot"]["artifact"].endswith("shot.png") and out["shot"]["size"] > 0
    steps = {s.step_path: s for s in sqlite_runtime.store.steps.steps(outcome.run_id)}
    assert steps["2"].output == ["green"]  # the step record holds what into: stored


# --- limits that cut a result short ------------------------------------------------------------
PAGINATE = """
params:
  start_url: {type: url, required: true}
  pages: {type: int, default: 5, min: 1, max: 10}
steps:
  - action: navigate
    url: "${start_url}"
  - id: pages
    repeat:
      max: "${pages}"
      %s: "li.next a"
      steps:
        - {action: extract, selector: ".quote .author", into: authors}
        - {action: click, selector: "li.next a", optional: true}
"""


def test_a_repeat_stopped_by_max_is_a_warning(any_runtime: Runtime, demo) -> None:
    loaded = template(PAGINATE % "until_missing")
    outcome = any_runtime.run_loaded(loaded, {"start_url": f"{demo.url}/quotes/", "pages": 2})
    assert outcome.status == "completed", outcome
    assert len(outcome.outputs["authors"]) == 20  # 2 of the 5 pages
    [warning] = outcome.warnings
    assert warning["step"] == "1" and warning["code"] == notices.REPEAT_MAX_REACHED
    assert "'pages' stopped at max=2" in warning["message"] and "li.next a" in warning["message"]
    assert outcome.as_result()["warnings"] == [warning]
    run = any_runtime.store.runs.get_run(outcome.run_id)
    assert run is not None and run.warnings == [warning]  # the record says so too

    # All five pages within max: the loop ended on its condition, nothing to warn about.
    whole = any_runtime.run_loaded(loaded, {"start_url": f"{demo.url}/quotes/", "pages": 5})
    assert whole.status == "completed" and len(whole.outputs["authors"]) == 50
    assert whole.warnings == [] and whole.as_result()["warnings"] == []
    assert any_runtime.store.runs.get_run(whole.run_id).warnings is None  # type: ignore[union-attr]


def test_while_present_warns_only_when_more_was_there(sqlite_runtime: Runtime, demo) -> None:
    loaded = template(PAGINATE % "while_present")
    cut = sqlite_runtime.run_loaded(loaded, {"start_url": f"{demo.url}/quotes/", "pages": 3})
    assert cut.status == "completed"
    assert [(w["step"], w["code"]) for w in cut.warnings] == [("1", notices.REPEAT_MAX_REACHED)]
    assert "while_present" in cut.warnings[0]["message"]
    # Four passes reach page 5 (no "next"): the condition would have stopped the loop there.
    exact = sqlite_runtime.run_loaded(loaded, {"start_url": f"{demo.url}/quotes/", "pages": 4})
    assert exact.status == "completed" and exact.warnings == []


def test_an_extract_limit_that_drops_records_is_a_warning_on_its_step(any_runtime: Runtime, demo) -> None:
    loaded = template(
        f"""
        steps:
          - {{action: navigate, url: "{demo.url}/quotes/"}}
          - {{action: extract, selector: ".quote", limit: 3, into: few}}
          - {{action: extract, selector: ".quote", limit: 10, into: all_ten}}
        """
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert len(outcome.outputs["few"]) == 3 and len(outcome.outputs["all_ten"]) == 10
    [warning] = outcome.warnings
    assert (warning["step"], warning["code"]) == ("1", notices.EXTRACT_LIMITED)
    assert "first 3 of 10 records" in warning["message"]
    steps = {s.step_path: s for s in any_runtime.store.steps.steps(outcome.run_id)}
    assert steps["1"].warnings == [{"code": notices.EXTRACT_LIMITED, "message": warning["message"]}]
    assert steps["2"].warnings is None  # limit 10 of 10: nothing was dropped


def test_a_wait_shortened_to_the_step_timeout_is_a_warning(sqlite_runtime: Runtime, demo) -> None:
    loaded = template(
        f"""
        steps:
          - {{action: navigate, url: "{demo.url}/"}}
          - {{action: wait, ms: 5000, timeout_s: 1}}
        """
    )
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert [(w["step"], w["code"]) for w in outcome.warnings] == [("1", notices.WAIT_SHORTENED)]
    assert "of the 5 s asked" in outcome.warnings[0]["message"]


def test_warnings_survive_a_resume_through_the_checkpoint() -> None:
    warning = notices.run_warning("1", notices.REPEAT_MAX_REACHED, "stopped at max")
    for box in (SecretBox(None), SecretBox(TEST_SECRET_KEY)):
        record = Checkpoint("2", "http://x/", {}, [], None, seq=1, warnings=[warning]).to_record(box)
        assert Checkpoint.from_record(record, box).warnings == [warning]
