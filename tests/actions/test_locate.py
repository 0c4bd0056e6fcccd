"""Selectors into iframes (``>>>``) and shadow DOM."""

from __future__ import annotations

from browserq.execute.runtime import Runtime
from tests.conftest import template


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
