"""run, demo, runs, show, cancel, batch — as a user runs them (a subprocess, SQLite, no servers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import browserq, no_traceback
from tests.conftest import REPO


def test_run_show_and_runs(tmp_path: Path, site) -> None:
    done = browserq(tmp_path, "run", "quotes", "-p", f"start_url={site.url}/quotes/", "-p", "max_pages=2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "COMPLETED" in done.stdout
    outputs = dict(line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)
    assert len(json.loads(outputs["quotes"])) == 20  # piped: each output one line of JSON, whole
    assert "✓" in done.stdout  # a line per finished step
    run_id = done.stdout.split("browserq show ")[-1].split()[0]
    shown = browserq(tmp_path, "show", run_id)
    assert shown.returncode == 0 and "Steps" in shown.stdout and "navigate" in shown.stdout
    listed = browserq(tmp_path, "runs")
    assert run_id[:12] in listed.stdout and "completed" in listed.stdout

def test_run_reports_bad_input_without_traceback(tmp_path: Path) -> None:
    done = browserq(tmp_path, "run", "quotes", "-p", "max_pages=0")
    assert done.returncode == 2
    assert "start_url" in done.stderr and "Traceback" not in done.stderr + done.stdout
    done = browserq(tmp_path, "run", "nope")
    assert done.returncode == 2 and "no template named 'nope'" in done.stderr

def test_failed_run_exits_1_and_shows_the_error(tmp_path: Path, site) -> None:
    done = browserq(tmp_path, "run", "quotes", "-p", f"start_url={site.url}/status/500")
    assert done.returncode == 1
    assert "HTTP_5XX" in done.stdout

@pytest.mark.slow
def test_demo_runs_every_bundled_template(tmp_path: Path) -> None:
    done = browserq(tmp_path, "demo", timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("COMPLETED") == 3
    assert "quotes: 50 items" in done.stdout
    assert (tmp_path / "cli.db").exists() and "Artifacts:" in done.stdout

def test_cancel_a_queued_run_and_show_its_history(tmp_path: Path, site) -> None:
    from browserq.execute.accept import prepare_run, record_run
    from browserq.store import Store
    from browserq.templates import TemplateRegistry

    store = Store(f"sqlite:///{tmp_path / 'cli.db'}")
    store.schema.upgrade()
    prepared = prepare_run(TemplateRegistry(REPO / "templates"), "quotes", {"start_url": f"{site.url}/quotes/"})
    record_run(store, prepared, secret_box=None)
    done = browserq(tmp_path, "cancel", prepared.run_id[:8], "--reason", "not today")
    assert done.returncode == 0 and "cancelled" in done.stdout
    assert store.runs.get_run(prepared.run_id).status == "cancelled"
    shown = browserq(tmp_path, "show", prepared.run_id[:8])
    assert "cancelled" in shown.stdout and "not today" in shown.stdout
    again = browserq(tmp_path, "cancel", prepared.run_id)
    assert "already ended: cancelled" in again.stdout
    store.dispose()

def test_runs_rejects_a_bad_status_with_the_valid_ones(tmp_path: Path) -> None:
    done = browserq(tmp_path, "runs", "--status", "bogus")
    assert done.returncode == 2
    no_traceback(done)
    error = [line for line in done.stderr.splitlines() if line.startswith("Error")]
    assert len(error) == 1 and "'bogus' is not one of" in error[0]
    for status in ("queued", "running", "retrying", "completed", "failed", "cancelled", "needs_review"):
        assert f"'{status}'" in error[0]
    assert browserq(tmp_path, "runs", "--status", "FAILED").returncode == 0  # any case

def test_status_choices_are_the_stores_statuses() -> None:
    from browserq.cli import RunStatusChoice
    from browserq.store.models import RunStatus

    assert [c.value for c in RunStatusChoice] == [s.value for s in RunStatus]


def test_the_bundled_templates_are_found_from_the_package() -> None:
    from browserq.cli.run_commands import bundled_templates_dir

    found = bundled_templates_dir()
    assert found == REPO / "templates" and (found / "quotes.yaml").is_file()
