"""What the report is made of, without a browser: the timeline's geometry, the outputs' preview,
and artifacts read only through the artifact store (missing ones become notes)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from browserq.report import RunNotFound, build_report, render_html
from browserq.report.outputs import MAX_JSON_CHARS, MAX_ROWS, preview
from browserq.report.timeline import build_timeline, ticks
from tests.report.conftest import Runs

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def step(path: str, attempt: int, start_ms: float, ms: float | None, status: str = "succeeded", **kw: Any) -> Any:
    values = dict(step_path=path, step_id=None, action="click", attempt=attempt, run_attempt=1, status=status,
                  started_at=T0 + timedelta(milliseconds=start_ms), duration_ms=ms,
                  finished_at=T0 + timedelta(milliseconds=start_ms + ms) if ms is not None else None,
                  error_code=None, error_message=None, warnings=None, url_after=None)
    return SimpleNamespace(**(values | kw))


def test_the_timeline_is_to_scale_with_retries_on_their_steps_row() -> None:
    run = SimpleNamespace(started_at=T0, finished_at=T0 + timedelta(seconds=10))
    steps = [step("0", 1, 0, 1000), step("1", 1, 1000, 2000, "failed", error_code="TIMEOUT", error_message="slow"),
             step("1", 2, 5000, 5000)]
    timeline = build_timeline(run, steps, now=T0 + timedelta(hours=1))
    assert [r.step_path for r in timeline.rows] == ["0", "1"]
    assert [(b.left_pct, b.width_pct, b.status) for b in timeline.rows[1].bars] == [
        (10.0, 20.0, "failed"), (50.0, 50.0, "succeeded")]
    assert "try 1 · failed · 2.0 s" in timeline.rows[1].bars[0].title
    assert "TIMEOUT: slow" in timeline.rows[1].bars[0].title
    assert timeline.total_ms == 10_000
    assert [t.label for t in timeline.ticks] == ["0", "2 s", "4 s", "6 s", "8 s", "10 s"]


def test_a_running_step_reaches_now_and_an_empty_run_has_no_timeline() -> None:
    run = SimpleNamespace(started_at=T0, finished_at=None)
    timeline = build_timeline(run, [step("0", 1, 0, None, "started")], now=T0 + timedelta(seconds=4))
    [bar] = timeline.rows[0].bars
    assert (bar.left_pct, bar.width_pct, timeline.total_ms) == (0.0, 100.0, 4000)
    assert build_timeline(SimpleNamespace(started_at=None, finished_at=None), [], now=T0).rows == ()


@pytest.mark.parametrize(("total_ms", "step_label"), [(850, "200 ms"), (2_500, "500 ms"), (95_000, "15 s"), (7_200_000, "15 min"), (3_000, "500 ms")])
def test_ticks_are_round_and_few(total_ms: float, step_label: str) -> None:
    found = ticks(total_ms)
    assert found[1].label == step_label and 2 <= len(found) <= 9 and found[-1].left_pct <= 100


def test_outputs_preview_records_as_rows_and_the_rest_as_cut_json() -> None:
    records = preview("quotes", [{"text": f"q{i}", "tags": ["a", "b"]} for i in range(25)])
    assert records.columns == ("text", "tags") and len(records.rows) == MAX_ROWS and records.more_rows == 15
    assert records.rows[0] == ("q0", "a, b") and records.summary == "25 records"
    big = preview("dump", {"html": "x" * (MAX_JSON_CHARS * 2)})
    assert big.truncated and len(big.json_text) <= MAX_JSON_CHARS + 2


class MemoryArtifacts:
    """An artifact store that is not a directory here (what an s3:// store looks like to the
    report): bytes by relative path; the trace 'downloaded' to a file of its own."""

    def __init__(self, blobs: dict[str, bytes], scratch: Path) -> None:
        self.blobs, self.scratch, self.read = blobs, scratch, []

    def read_bytes(self, relative: str) -> bytes:
        self.read.append(relative)
        if relative not in self.blobs:
            raise FileNotFoundError(2, "No such object", relative)
        return self.blobs[relative]

    def local_path(self, relative: str) -> Path:
        local = self.scratch / relative.replace("/", "_")
        local.write_bytes(self.read_bytes(relative))
        return local

    def location(self, relative: str) -> str:
        return f"s3://bucket/runs/{relative}"


def test_artifacts_are_read_only_through_the_artifact_store(
    runs: Runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, settings = runs.runtime.store, runs.runtime.settings
    artifacts = store.steps.artifacts(runs.failed)
    blobs = {a.path: (settings.artifacts_dir / a.path).read_bytes() for a in artifacts if a.kind != "console"}
    remote = MemoryArtifacts(blobs, tmp_path)
    monkeypatch.setattr("browserq.report.collect.artifact_store", lambda _settings: remote)
    elsewhere = settings.model_copy(update={"artifacts_dir": tmp_path / "nothing-here"})
    report = build_report(store, elsewhere, runs.failed)
    [snapshot] = report.snapshots
    assert snapshot.screenshot is not None and snapshot.screenshot.data_uri.startswith("data:image/png;base64,")
    assert snapshot.dom is not None and "Hostile quotes" in snapshot.dom.source
    assert snapshot.network and snapshot.console is None  # the console object is missing: a note
    assert snapshot.notes and "console.json could not be read: " in snapshot.notes[0]
    [trace] = report.traces
    assert trace.location.startswith("s3://bucket/runs/") and trace.command.startswith(
        f"playwright show-trace {tmp_path}/")
    assert all(line.location.startswith("s3://") for line in report.artifacts)
    assert "s3://bucket/runs/" in render_html(report)


def test_params_are_shown_as_stored_and_an_unknown_run_is_refused(runs: Runs) -> None:
    store, settings = runs.runtime.store, runs.runtime.settings
    report = build_report(store, settings, runs.completed)
    assert json.loads(dict((f.label, f.value) for f in report.facts)["params"]) == {"token": "[secret:token]"}
    with pytest.raises(RunNotFound, match="no run 'f00d'"):
        build_report(store, settings, "f00d")


def test_a_queued_run_has_a_report_too(runs: Runs) -> None:
    from browserq.execute.accept import prepare_run, record_run
    from browserq.templates import TemplateRegistry
    from tests.conftest import REPO

    store, settings = runs.runtime.store, runs.runtime.settings
    prepared = prepare_run(TemplateRegistry(REPO / "templates"), "quotes", {"start_url": f"{runs.site}/quotes"})
    record_run(store, prepared, secret_box=None)
    report = build_report(store, settings, prepared.run_id)
    assert report.status == "queued" and report.timeline.rows == () and report.steps == ()
    page = render_html(report)
    assert "No step has started." in page and "quotes@1.2.0" in page
    assert store.cancellation.request_cancel(prepared.run_id, reason="only reported").status == "cancelled"
    assert "only reported" in render_html(build_report(store, settings, prepared.run_id))  # why it ended
