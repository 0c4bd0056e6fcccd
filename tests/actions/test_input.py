"""The input actions (click, fill, type, select, check, press, hover) on real forms."""

from __future__ import annotations

from browserq.execute.runtime import Runtime
from tests.conftest import template


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
