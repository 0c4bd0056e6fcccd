"""The input actions (click, fill, type, select, check, press, hover) on real forms."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from typing import Any

from browserq.execute.runtime import Runtime
from tests.conftest import template
from tests.support.http import serve_http


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


class RewritingForm(BaseHTTPRequestHandler):
    """A form whose page script rewrites what is typed into one field (upper case, as a mask
    would), next to a plain field."""

    PAGE = b"""<!doctype html><html><body>
<input id="plain"><input id="upper">
<script>
  const upper = document.getElementById("upper");
  upper.addEventListener("input", () => { upper.value = upper.value.toUpperCase(); });
</script>
</body></html>"""

    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/" else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        if self.path == "/":
            self.wfile.write(self.PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        return None


REWRITE_TEMPLATE = """
params:
  word: {type: secret, required: true}
steps:
  - {action: navigate, url: "http://%s/"}
  - {action: fill, selector: "#plain", value: "${word}"}
  - {action: fill, selector: "#upper", value: "${word}", retries: 0}
"""


def test_a_value_the_page_rewrites_after_fill_is_a_value_mismatch(sqlite_runtime: Runtime) -> None:
    with serve_http(RewritingForm) as host:
        outcome = sqlite_runtime.run_loaded(template(REWRITE_TEMPLATE % host), {"word": "hunter2"})
    assert (outcome.status, outcome.error_code, outcome.error_step_path) == ("failed", "VALUE_MISMATCH", "2")
    # The plain field kept the value; the rewritten one is reported without showing the secret
    # in any form (its upper-cased spelling included).
    statuses = [(s.step_path, s.status) for s in sqlite_runtime.store.steps.steps(outcome.run_id)]
    assert ("1", "succeeded") in statuses
    assert "#upper holds a value after fill" in (outcome.error_message or "")
    assert "hunter2" not in (outcome.error_message or "").lower()
