"""Every action against real pages served by the demo site, through the real runner and store."""

from __future__ import annotations

import hashlib

from browserq.runtime import Runtime
from browserq.store import Store
from tests.conftest import template


def steps_of(store: Store, run_id: str) -> list:
    return store.steps(run_id)


def test_paginated_extract_accumulates_across_repeat(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        params:
          start_url: {type: url, required: true}
          max_pages: {type: int, default: 5, min: 1, max: 50}
        steps:
          - id: open
            action: navigate
            url: "${start_url}"
          - id: pages
            repeat:
              max: "${max_pages}"
              until_missing: "li.next a"
              steps:
                - action: extract
                  selector: ".quote"
                  fields: {text: ".text", author: ".author", tags: {selector: ".tag", all: true}}
                  into: quotes
                - action: click
                  selector: "li.next a"
                  optional: true
          - action: get
            what: title
            into: title
        """
    )
    outcome = any_runtime.run_loaded(loaded, {"start_url": f"{demo.url}/quotes/"})
    assert outcome.status == "completed", outcome
    quotes = outcome.outputs["quotes"]
    assert len(quotes) == 50
    assert all(q["text"] and q["author"] and isinstance(q["tags"], list) for q in quotes)
    assert len({q["text"] for q in quotes}) == 50  # every page once, no duplicates
    for page in range(2, 6):
        assert demo.hits(f"/quotes/page/{page}/") == 1
    steps = steps_of(any_runtime.store, outcome.run_id)
    paths = [s.step_path for s in steps]
    assert "1[1].0" in paths and "1[5].0" in paths and "1[6].0" not in paths
    last_click = [s for s in steps if s.step_path == "1[5].1"]
    assert [s.status for s in last_click] == ["skipped"]  # optional, element missing on page 5


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
    paths = {s.step_path for s in any_runtime.store.steps(outcome.run_id)}
    assert {"1[1].0[3].0", "1[2].0[1].0", "1[2].2"} <= paths
    assert demo.hits("/quotes/page/3/") == 1


def test_form_actions(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        settings: {allow_eval: true}
        steps:
          - action: navigate
            url: "%s/widgets"
          - {action: fill, selector: "#keys", value: "abc"}
          - {action: fill, selector: "#keys", value: "xyz"}
          - {action: get, what: value, selector: "#keys", into: after_fill}
          - {action: type, selector: "#keys", text: "12", delay_ms: 5}
          - {action: get, what: value, selector: "#keys", into: after_type}
          - {action: press, selector: "#keys", key: "Enter"}
          - {action: get, what: text, selector: "#keylog", into: keylog}
          - {action: select, selector: "#color", value: "green"}
          - {action: select, selector: "#color", value: "Blue", by: label}
          - {action: get, what: value, selector: "#color", into: color}
          - {action: check, selector: "#agree"}
          - {action: eval, expression: "document.querySelector('#agree').checked", into: checked}
          - {action: uncheck, selector: "#agree"}
          - {action: eval, expression: "document.querySelector('#agree').checked", into: unchecked}
          - {action: click, selector: "#inc"}
          - {action: click, selector: "#inc", click_count: 1}
          - {action: get, what: text, selector: "#counter", into: counter}
          - {action: hover, selector: "#hover-target"}
          - {action: assert, selector: "#hover-tip"}
          - {action: get, what: attribute, selector: "#to-quotes", attribute: href, into: href}
          - {action: get, what: count, selector: "iframe", into: frames}
          - {action: get, what: html, selector: "#status", into: status_html}
          - {action: get, what: url, into: url}
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    out = outcome.outputs
    assert out["after_fill"] == "xyz"  # fill replaces, never appends
    assert out["after_type"] == "xyz12"  # type appends keystrokes
    assert "Enter" in out["keylog"]
    assert out["color"] == "blue"
    assert out["checked"] is True and out["unchecked"] is False
    assert out["counter"] == "2"
    assert out["href"].endswith("/quotes/")
    assert out["frames"] == 1
    assert out["url"] == f"{demo.url}/widgets"


def test_wait_variants_and_retry_in_place(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        steps:
          - action: navigate
            url: "%s/widgets?delayed_ms=2500"
          - {action: wait, ms: 10}
          - {action: wait, load_state: load}
          - {action: click, selector: "#delayed", timeout_s: 0.5, retries: 10}
          - {action: wait, selector: "#delayed", state: visible}
          - {action: click, selector: "#to-quotes"}
          - {action: wait, url: "**/quotes/"}
          - {action: wait, url: "re:.*/quotes/$"}
          - {action: assert, url: "**/quotes/"}
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    delayed = [s for s in any_runtime.store.steps(outcome.run_id) if s.step_path == "3"]
    assert delayed[0].status == "failed" and delayed[0].error_code == "SELECTOR_NOT_FOUND"
    assert delayed[0].retryable is True
    assert delayed[-1].status == "succeeded"
    assert [s.attempt for s in delayed] == list(range(1, len(delayed) + 1))  # a retry is a new row


def test_infinite_scroll_to_bottom(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        steps:
          - action: navigate
            url: "%s/scroll"
          - repeat:
              max: 20
              while_present: "body:not(:has(#end))"
              steps:
                - {action: scroll, to: bottom, settle_ms: 2000}
          - {action: extract, selector: ".item .title", into: items}
          - {action: scroll, to: top}
          - {action: scroll, pixels: 300}
          - {action: scroll, selector: "#end"}
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert len(outcome.outputs["items"]) == 50


def test_frames_and_shadow_dom(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        steps:
          - action: navigate
            url: "%s/widgets"
          - {action: get, what: text, selector: ".shadow-text", into: shadow}
          - {action: click, selector: "iframe#frame >>> #in-frame"}
          - {action: get, what: text, selector: "iframe#frame >>> #frame-status", into: frame_status}
          - action: extract
            selector: "shadow-box"
            fields: {inner: ".shadow-text"}
            into: shadow_records
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["shadow"] == "inside shadow"
    assert outcome.outputs["frame_status"]
    assert outcome.outputs["shadow_records"][0]["inner"] == "inside shadow"


def test_screenshots_are_stored_as_artifacts(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        settings: {allow_eval: true}
        steps:
          - action: navigate
            url: "%s/quotes/"
          - {action: eval, expression: "[window.innerWidth, window.innerHeight]", into: viewport}
          - {action: screenshot, name: page.png}
          - {action: screenshot, name: shots/full.png, full_page: true}
          - {action: screenshot, selector: ".quote"}
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    artifacts = any_runtime.store.artifacts(outcome.run_id)
    steps = {s.id: s for s in any_runtime.store.steps(outcome.run_id)}
    assert [a.kind for a in artifacts] == ["screenshot"] * 3
    width, height = outcome.outputs["viewport"]
    for artifact in artifacts:
        data = (any_runtime.settings.artifacts_dir / artifact.path).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert hashlib.sha256(data).hexdigest() == artifact.sha256 and len(data) == artifact.size
        assert steps[artifact.step_attempt_id].action == "screenshot"
    sizes = {a.path.rsplit("/", 1)[-1]: png_size(any_runtime.settings.artifacts_dir / a.path) for a in artifacts}
    assert sizes["page.png"] == (width, height)  # the viewport
    assert sizes["full.png"][1] >= height
    element = sizes["screenshot-4.png"]
    assert element[0] < width and element[1] < height  # just the element


def png_size(path) -> tuple[int, int]:
    import struct

    return struct.unpack(">II", path.read_bytes()[16:24])


def test_asserts_pass_and_fail_permanently(any_runtime: Runtime, demo) -> None:
    passing = template(
        """
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: assert, selector: ".quote"}
          - {action: assert, selector: "#missing", exists: false}
          - {action: assert, text: "Next"}
          - {action: assert, text: "Next", within: "li.next"}
          - {action: assert, url: "re:/quotes/$"}
        """
        % demo.url
    )
    assert any_runtime.run_loaded(passing).status == "completed"
    failing = template(
        """
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: assert, text: "no such words anywhere", timeout_s: 0.5, message: "quotes page lost its words"}
          - {action: navigate, url: "%s/never-reached"}
        """
        % (demo.url, demo.url)
    )
    outcome = any_runtime.run_loaded(failing)
    assert outcome.status == "failed"
    assert outcome.error_code == "ASSERTION_FAILED" and outcome.error_step_path == "1"
    assert "quotes page lost its words" in outcome.error_message
    attempts = [s for s in any_runtime.store.steps(outcome.run_id) if s.step_path == "1"]
    assert len(attempts) == 1 and attempts[0].retryable is False  # permanent: no retry
    assert demo.hits("/never-reached") == 0


def test_http_status_codes_map_to_error_codes(any_runtime: Runtime, demo) -> None:
    not_found = template('steps:\n  - {action: navigate, url: "%s/status/404"}' % demo.url)
    outcome = any_runtime.run_loaded(not_found)
    assert (outcome.status, outcome.error_code) == ("failed", "HTTP_4XX")
    assert demo.hits("/status/404") == 1  # permanent: not retried

    flaky = template(
        'steps:\n  - {action: navigate, url: "%s/flaky?key=%s&fail=2", retries: 3}' % (demo.url, outcome.run_id)
    )
    outcome = any_runtime.run_loaded(flaky)
    assert outcome.status == "completed", outcome
    codes = [s.error_code for s in any_runtime.store.steps(outcome.run_id)]
    assert codes == ["HTTP_5XX", "HTTP_5XX", None]


def test_run_timeout_bounds_a_hung_page(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        settings: {timeout_s: 1.5, step_timeout_s: 30, run_retries: 0}
        steps:
          - {action: navigate, url: "%s/slow?ms=20000"}
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "failed" and outcome.error_code in {"RUN_TIMEOUT", "TIMEOUT"}
    run = any_runtime.store.get_run(outcome.run_id)
    assert (run.finished_at - run.started_at).total_seconds() < 10
    assert all(s.status != "started" for s in any_runtime.store.steps(outcome.run_id))
