"""``when:`` and blocks against real Chromium: a cookie banner clicked only when it shows, a branch
on an earlier output, a block skipped whole, nested paths, and a resume inside a block."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserq.cli import render
from browserq.execute.runtime import Runtime
from tests.conftest import make_settings, template
from tests.support.http import html_pages, serve_http

#: The banner is written by the page only while the consent cookie is missing; accepting sets it.
BANNER_SCRIPT = """
<script>
  if (!document.cookie.includes('consent=1')) {
    document.body.insertAdjacentHTML('afterbegin', '<div id="cookie-banner"><button id="accept" '
      + 'onclick="document.cookie=\\'consent=1; path=/\\'; this.parentNode.remove()">OK</button></div>');
  }
</script>
"""
SHOP = """<html><head><title>Shop</title></head><body>
<h1>Shop</h1>
%s
<ul>%s</ul>
<button id="buy" onclick="document.getElementById('status').textContent='bought'">Buy</button>
<button id="notify" onclick="document.getElementById('status').textContent='will notify'">Notify</button>
<p id="status">idle</p>
%s
</body></html>"""
LATE_BANNER = """<script>setTimeout(() => document.body.insertAdjacentHTML('afterbegin',
  '<div id="cookie-banner"><button id="accept" onclick="this.parentNode.remove()">OK</button></div>'), 400);
</script>"""
PAGES = {
    "/banner": SHOP % ("", "<li class=item>a</li>", BANNER_SCRIPT),
    "/plain": SHOP % ("", "<li class=item>a</li><li class=item>b</li>", ""),
    "/late": SHOP % ("", "<li class=item>a</li>", LATE_BANNER),
    "/sold-out": SHOP % ("", "", ""),
    "/flaky-ok": "<html><body><h1>Flaky ok</h1></body></html>",
}


class _Site:
    def __init__(self, base: str, hits: dict[str, int]) -> None:
        self.base, self.hits = base, hits


@pytest.fixture(scope="module")
def shop() -> Iterator[_Site]:
    hits: dict[str, int] = {}
    lock = threading.Lock()
    pages = html_pages(PAGES)

    class Handler(pages):  # type: ignore[misc, valid-type]
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            with lock:
                hits[path] = hits.get(path, 0) + 1
                first = hits[path] == 1
            if path == "/flaky":  # blocked the first time only
                if first:
                    body = b"<html><body>slow down</body></html>"
                    self.send_response(429)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.path = "/flaky-ok"
            super().do_GET()

    with serve_http(Handler) as host:
        yield _Site(f"http://{host}", hits)


def _steps(runtime: Runtime, run_id: str) -> dict[str, Any]:
    return {s.step_path: s for s in runtime.store.steps.steps(run_id)}


BANNER = """
params: {page: {type: url, required: true}}
settings: {trace: off}
steps:
  - {action: navigate, url: "${page}"}
  - {id: consent, action: click, selector: "#accept", when: {present: "#cookie-banner", within_ms: %d}}
  - {action: get, what: text, selector: h1, into: heading}
  - {action: get, what: count, selector: "#cookie-banner", into: banners}
"""


def test_a_banner_is_clicked_only_when_it_appears(any_runtime: Runtime, shop: _Site) -> None:
    loaded = template(BANNER % 300)
    with_banner = any_runtime.run_loaded(loaded, {"page": f"{shop.base}/banner"})
    assert with_banner.status == "completed", with_banner
    assert with_banner.outputs == {"heading": "Shop", "banners": 0}  # clicked away
    consent = _steps(any_runtime, with_banner.run_id)["1"]
    assert (consent.step_id, consent.status, consent.output) == ("consent", "succeeded", None)

    without = any_runtime.run_loaded(loaded, {"page": f"{shop.base}/plain"})
    assert without.status == "completed", without
    assert without.outputs == {"heading": "Shop", "banners": 0}
    skipped = _steps(any_runtime, without.run_id)["1"]
    assert (skipped.step_id, skipped.action, skipped.status, skipped.error_code) == (
        "consent", "click", "skipped", None)
    assert skipped.output == {"skipped": "when: present '#cookie-banner': nothing matched within 300 ms"}
    assert skipped.inputs["when"] == {"present": "#cookie-banner", "within_ms": 300}


def test_within_ms_waits_for_a_banner_that_shows_late(sqlite_runtime: Runtime, shop: _Site) -> None:
    outcome = sqlite_runtime.run_loaded(template(BANNER % 5000), {"page": f"{shop.base}/late"})
    assert outcome.status == "completed", outcome
    assert _steps(sqlite_runtime, outcome.run_id)["1"].status == "succeeded"
    assert outcome.outputs["banners"] == 0


def test_show_prints_the_skip_reason(sqlite_runtime: Runtime, shop: _Site, capsys) -> None:
    outcome = sqlite_runtime.run_loaded(template(BANNER % 100), {"page": f"{shop.base}/plain"})
    store = sqlite_runtime.store
    render.show_plain(store, store.runs.get_run(outcome.run_id), store.steps.steps(outcome.run_id), [])
    lines = capsys.readouterr().out.splitlines()
    [row] = [line for line in lines if line.startswith("1\t")]
    assert row.split("\t")[1:3] == ["consent", "click"] and "\tskipped\t" in row
    assert "when: present '#cookie-banner': nothing matched within 100 ms" in row


BRANCH = """
params: {page: {type: url, required: true}}
settings: {trace: off}
steps:
  - {action: navigate, url: "${page}"}
  - {action: get, what: count, selector: ".item", into: items}
  - {id: buy, action: click, selector: "#buy", when: {if: "${outputs.items > 0}"}}
  - {id: notify, action: click, selector: "#notify", when: {if: "outputs.items == 0 and run.attempt == 1"}}
  - {action: get, what: text, selector: "#status", into: status}
"""


@pytest.mark.parametrize(
    ("page", "status", "ran", "skipped", "reason"),
    [
        ("/plain", "bought", "buy", "notify", "when: if 'outputs.items == 0 and run.attempt == 1' is false"),
        ("/sold-out", "will notify", "notify", "buy", "when: if '${outputs.items > 0}' is false"),
    ],
)
def test_a_branch_on_an_earlier_output(
    any_runtime: Runtime, shop: _Site, page: str, status: str, ran: str, skipped: str, reason: str
) -> None:
    outcome = any_runtime.run_loaded(template(BRANCH), {"page": shop.base + page})
    assert outcome.status == "completed", outcome
    assert outcome.outputs["status"] == status
    by_id = {s.step_id: s for s in any_runtime.store.steps.steps(outcome.run_id) if s.step_id}
    assert by_id[ran].status == "succeeded"
    assert (by_id[skipped].status, by_id[skipped].output) == ("skipped", {"skipped": reason})


def test_a_block_whose_condition_fails_skips_all_its_steps(any_runtime: Runtime, shop: _Site) -> None:
    body = """
    params: {page: {type: url, required: true}}
    settings: {trace: off}
    steps:
      - {action: navigate, url: "${page}"}
      - id: banner
        when: {present: "#cookie-banner", within_ms: 200}
        steps:
          - {action: click, selector: "#accept"}
          - {action: get, what: text, selector: "#never-there", into: nothing}
      - {action: get, what: text, selector: h1, into: heading}
    """
    outcome = any_runtime.run_loaded(template(body), {"page": f"{shop.base}/plain"})
    assert outcome.status == "completed", outcome
    assert outcome.outputs == {"heading": "Shop"}
    steps = _steps(any_runtime, outcome.run_id)
    assert sorted(steps) == ["0", "1", "2"]  # nothing inside the block ran or was recorded
    block = steps["1"]
    assert (block.step_id, block.action, block.status) == ("banner", "block", "skipped")
    assert block.output == {"skipped": "when: present '#cookie-banner': nothing matched within 200 ms"}


def test_paths_inside_blocks_and_repeats(sqlite_runtime: Runtime, shop: _Site) -> None:
    body = """
    params: {page: {type: url, required: true}}
    settings: {trace: off}
    steps:
      - {action: navigate, url: "${page}"}
      - when: {present: "#cookie-banner"}
        steps:
          - {action: click, selector: "#accept"}
          - repeat:
              max: 2
              steps:
                - steps:
                    - {action: get, what: title, into: title}
                    - {action: click, selector: "#accept", when: {present: "#cookie-banner", within_ms: 0}}
          - {action: get, what: text, selector: h1, into: h, when: {absent: "#cookie-banner"}}
      - {action: get, what: url, into: here, when: {url: "**/banner"}}
      - {action: get, what: url, into: there, when: {url: "re:/nowhere$"}}
    """
    outcome = sqlite_runtime.run_loaded(template(body), {"page": f"{shop.base}/banner"})
    assert outcome.status == "completed", outcome
    statuses = {s.step_path: s.status for s in sqlite_runtime.store.steps.steps(outcome.run_id)}
    assert statuses == {
        "0": "succeeded",
        "1.0": "succeeded",
        "1.1[1].0.0": "succeeded",
        "1.1[1].0.1": "skipped",
        "1.1[2].0.0": "succeeded",
        "1.1[2].0.1": "skipped",
        "1.2": "succeeded",
        "2": "succeeded",
        "3": "skipped",
    }
    assert set(outcome.outputs) == {"title", "h", "here"}
    there = _steps(sqlite_runtime, outcome.run_id)["3"]
    assert there.output == {
        "skipped": f"when: url 're:/nowhere$' does not match the page's URL {shop.base}/banner"
    }


def test_an_if_over_values_that_do_not_compare_fails_the_step(sqlite_runtime: Runtime, shop: _Site) -> None:
    body = """
    params: {page: {type: url, required: true}}
    settings: {trace: off}
    steps:
      - {action: navigate, url: "${page}"}
      - {action: get, what: text, selector: h1, into: heading}
      - {action: click, selector: "#buy", when: {if: "outputs.heading > 3"}}
    """
    outcome = sqlite_runtime.run_loaded(template(body), {"page": f"{shop.base}/plain"})
    assert (outcome.status, outcome.error_code, outcome.error_step_path) == (
        "failed", "INVALID_STEP_INPUT", "2")
    assert "cannot order a string and a number" in outcome.error_message


@pytest.fixture
def quick_retry_runtime(tmp_path: Path) -> Iterator[Runtime]:
    """A runtime whose run-level retries come at once (the default backoff is seconds)."""
    runtime = Runtime(make_settings(tmp_path, run_retry_backoff_s=0.01)).start()
    yield runtime
    runtime.stop()


def test_a_run_resumes_inside_a_block_without_judging_its_condition_again(
    quick_retry_runtime: Runtime, shop: _Site
) -> None:
    """The checkpoint is at 1.0 (the consent click, inside the block); /flaky then blocks the
    run once. The retry resumes at 1.1: the banner is gone by then (the consent cookie came back
    with the checkpoint), so judging the block's ``when`` again would wrongly skip the rest."""
    body = """
    params: {base: {type: url, required: true}}
    settings: {trace: off, run_retries: 1}
    steps:
      - {action: navigate, url: "${base}/banner"}
      - id: consent
        when: {present: "#cookie-banner"}
        steps:
          - {id: accept, action: click, selector: "#accept", checkpoint: true}
          - {id: flaky, action: navigate, url: "${base}/flaky"}
          - {id: after, action: get, what: text, selector: h1, into: heading}
      - {id: end, action: get, what: count, selector: "#cookie-banner", into: banners}
    """
    runtime = quick_retry_runtime
    outcome = runtime.run_loaded(template(body), {"base": shop.base})
    assert outcome.status == "completed", outcome
    assert outcome.outputs == {"heading": "Flaky ok", "banners": 0}
    rows = [(s.run_attempt, s.step_path, s.status) for s in runtime.store.steps.steps(outcome.run_id)]
    assert rows == [
        (1, "0", "succeeded"),
        (1, "1.0", "succeeded"),
        (1, "1.1", "failed"),
        (2, "1.0~resume", "succeeded"),
        (2, "1.1", "succeeded"),
        (2, "1.2", "succeeded"),
        (2, "2", "succeeded"),
    ]
    assert runtime.store.runs.get_run(outcome.run_id).attempt == 2


def test_a_condition_takes_a_locator_like_any_selector(sqlite_runtime: Runtime, shop: _Site) -> None:
    body = """
    params: {page: {type: url, required: true}}
    settings: {trace: off}
    steps:
      - {action: navigate, url: "${page}"}
      - id: ok
        action: click
        selector: {role: button, name: OK}
        when: {present: {role: button, name: OK}, within_ms: 200}
    """
    loaded = template(body)
    clicked = sqlite_runtime.run_loaded(loaded, {"page": f"{shop.base}/banner"})
    assert _steps(sqlite_runtime, clicked.run_id)["1"].status == "succeeded", clicked
    skipped = _steps(sqlite_runtime, sqlite_runtime.run_loaded(loaded, {"page": f"{shop.base}/plain"}).run_id)["1"]
    assert skipped.status == "skipped"
    reason = skipped.output["skipped"]
    assert reason.startswith("when: present ") and "OK" in reason, reason
    assert reason.endswith(": nothing matched within 200 ms"), reason
