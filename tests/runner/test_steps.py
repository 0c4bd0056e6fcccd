"""The step loop: repeat bounds, nesting and stop conditions, through the real runner."""

from __future__ import annotations

from browserq.execute.runtime import Runtime
from tests.conftest import template


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
