"""navigate, wait and scroll on real pages: HTTP statuses, wait variants, infinite scroll."""

from __future__ import annotations

import os

from browserq.execute.runtime import Runtime
from tests.conftest import template


def test_wait_variants_and_retry_in_place(any_runtime: Runtime, demo) -> None:
    # #delayed shows 5 s after the page loads: the click's first try must come before it (at
    # 2.5 s a nested driver-matrix suite on a loaded machine once began it later), and its
    # retries (0.5-s tries, 0.05 s doubling between them) outlast it.
    loaded = template(
        """
        steps:
          - action: navigate
            url: "%s/widgets?delayed_ms=5000"
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
    delayed = [s for s in any_runtime.store.steps.steps(outcome.run_id) if s.step_path == "3"]
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
    codes = [s.error_code for s in any_runtime.store.steps.steps(outcome.run_id)]
    assert codes == ["HTTP_5XX", "HTTP_5XX", None]


def test_go_back_returns_to_the_previous_page_and_fails_without_one(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: navigate, url: "%s/quotes/page/2/"}
          - {action: go_back, into: back}
          - {action: get, what: url, into: here}
        """
        % (demo.url, demo.url)
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["here"] == f"{demo.url}/quotes/"
    back = outcome.outputs["back"]
    assert back["url"] == f"{demo.url}/quotes/"
    # None: restored from the back/forward cache, which patchright keeps on (Playwright turns it
    # off) — in the full Chromium; the headless shell has no back/forward cache to restore from.
    cached = os.environ.get("BROWSERQ_DRIVER") == "patchright" and os.environ.get("BROWSERQ_BROWSER") != "headless-shell"
    assert back["status"] == (None if cached else 200), back

    first = any_runtime.run_loaded(template('steps:\n  - {action: navigate, url: "%s/quotes/"}\n'
                                            '  - {action: go_back}' % demo.url))
    assert first.status == "failed" and first.error_code == "NAVIGATION_FAILED"
