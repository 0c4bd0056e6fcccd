"""Evidence through the real runner: a failed run keeps its snapshot and trace linked to the
failing step; a successful one keeps a trace only when asked to."""

from __future__ import annotations

import json
import zipfile

from browserq.execute.runtime import Runtime
from tests.conftest import template


def test_failed_run_keeps_snapshot_and_trace_linked_to_failing_step(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        settings: {trace: on_failure, step_timeout_s: 1}
        steps:
          - {action: navigate, url: "%s/console-error"}
          - {action: click, selector: "#does-not-exist", retries: 1}
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "failed" and outcome.error_code == "SELECTOR_NOT_FOUND"
    store = any_runtime.store
    steps = store.steps.steps(outcome.run_id)
    failing = [s for s in steps if s.step_path == "1"]
    assert [s.attempt for s in failing] == [1, 2]
    artifacts = {a.kind: a for a in store.steps.artifacts(outcome.run_id)}
    assert set(artifacts) == {"failure_screenshot", "dom", "console", "network", "trace"}
    for artifact in artifacts.values():
        assert artifact.step_attempt_id == failing[-1].id
        assert (any_runtime.settings.artifacts_dir / artifact.path).stat().st_size == artifact.size > 0
    base = any_runtime.settings.artifacts_dir
    assert (base / artifacts["failure_screenshot"].path).read_bytes()[:4] == b"\x89PNG"
    assert "<html" in (base / artifacts["dom"].path).read_text().lower()
    console = json.loads((base / artifacts["console"].path).read_text())
    assert any("boom from page" in entry["text"] for entry in console)
    network = json.loads((base / artifacts["network"].path).read_text())
    assert any(entry["status"] == 500 and "/status/500" in entry["url"] for entry in network)
    with zipfile.ZipFile(base / artifacts["trace"].path) as trace:
        names = trace.namelist()
        assert any(n.endswith(".trace") for n in names)
        assert b"does-not-exist" in b"".join(trace.read(n) for n in names if n.endswith(".trace"))


def test_successful_run_discards_on_failure_trace_but_keeps_always(any_runtime: Runtime, demo) -> None:
    for mode, expected in (("on_failure", []), ("always", ["trace"]), ("off", [])):
        loaded = template(
            'settings: {trace: %s}\nsteps:\n  - {action: navigate, url: "%s/quotes/"}' % (mode, demo.url)
        )
        outcome = any_runtime.run_loaded(loaded)
        assert outcome.status == "completed"
        assert [a.kind for a in any_runtime.store.steps.artifacts(outcome.run_id)] == expected, mode
