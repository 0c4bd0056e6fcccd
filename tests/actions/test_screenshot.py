"""screenshot steps: stored as artifacts, linked to their step."""

from __future__ import annotations

import hashlib

import pytest

from browserq.execute.runtime import Runtime
from tests.conftest import template


def test_screenshots_are_stored_as_artifacts(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        settings: {allow_eval: true}
        steps:
          - action: navigate
            url: "%s/quotes/"
          - {action: eval, expression: "[window.innerWidth, window.innerHeight, window.devicePixelRatio]", into: viewport}
          - {action: screenshot, name: page.png}
          - {action: screenshot, name: shots/full.png, full_page: true}
          - {action: screenshot, selector: ".quote"}
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    artifacts = any_runtime.store.steps.artifacts(outcome.run_id)
    steps = {s.id: s for s in any_runtime.store.steps.steps(outcome.run_id)}
    assert [a.kind for a in artifacts] == ["screenshot"] * 3
    css_width, css_height, scale = outcome.outputs["viewport"]  # the identity picks the scale
    width, height = round(css_width * scale), round(css_height * scale)
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


def test_the_run_artifact_budget_stops_screenshots_and_skips_evidence_with_a_warning(
    sqlite_runtime: Runtime, demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """30 full-page screenshots once made a 112 MB report: the run's artifacts (screenshots,
    evidence) now stay within BROWSERQ_MAX_RUN_ARTIFACT_BYTES."""
    budget = 64 * 1024
    monkeypatch.setattr(sqlite_runtime.settings, "max_run_artifact_bytes", budget)
    shots = "\n".join(f"  - {{action: screenshot, full_page: true, name: 'shot-{n}.png'}}" for n in range(30))
    loaded = template(f'steps:\n  - {{action: navigate, url: "{demo.url}/quotes/"}}\n{shots}\n')
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "failed" and outcome.error_code == "ARTIFACTS_TOO_LARGE", outcome
    assert "BROWSERQ_MAX_RUN_ARTIFACT_BYTES" in outcome.error_message
    artifacts = sqlite_runtime.store.steps.artifacts(outcome.run_id)
    assert 0 < sum(a.size for a in artifacts) <= budget
    assert "failure_screenshot" not in {a.kind for a in artifacts}  # no room left for the failure screenshot...
    skipped = [w for w in outcome.warnings if w["code"] == "ARTIFACTS_TOO_LARGE"]
    assert any("'failure.png'" in w["message"] for w in skipped)  # ...and the run says so
    assert all(w["message"].startswith("evidence skipped") for w in skipped)
    on_disk = sum(p.stat().st_size for p in (sqlite_runtime.settings.artifacts_dir / outcome.run_id).rglob("*") if p.is_file())
    assert on_disk <= budget
    run = sqlite_runtime.store.runs.get_run(outcome.run_id)
    assert [w["code"] for w in run.warnings] == [w["code"] for w in outcome.warnings]
