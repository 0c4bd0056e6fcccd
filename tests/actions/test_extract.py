"""extract (and its accumulation across a repeat) on real pages of the demo site."""

from __future__ import annotations

from browserq.execute.runtime import Runtime
from tests.conftest import template


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
    steps = any_runtime.store.steps.steps(outcome.run_id)
    paths = [s.step_path for s in steps]
    assert "1[1].0" in paths and "1[5].0" in paths and "1[6].0" not in paths
    last_click = [s for s in steps if s.step_path == "1[5].1"]
    assert [s.status for s in last_click] == ["skipped"]  # optional, element missing on page 5
