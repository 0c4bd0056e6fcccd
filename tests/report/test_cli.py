"""``browserq report`` and the trace command of ``browserq show``, as a user runs them (a
subprocess) against the runs of tests/report/conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import ANSI, browserq, no_traceback
from tests.report.conftest import Runs


def cli(runs: Runs, tmp_path: Path, *args: str, **env: str):
    settings = runs.runtime.settings
    return browserq(tmp_path, *args, BROWSERQ_DATABASE_URL=settings.database_url,
                    BROWSERQ_ARTIFACTS_DIR=str(settings.artifacts_dir), **env)


def test_report_writes_the_page_here_and_says_where(runs: Runs, tmp_path: Path) -> None:
    done = cli(runs, tmp_path, "report", runs.failed[:10])
    assert done.returncode == 0, done.stdout + done.stderr
    page = tmp_path / f"report-{runs.failed}.html"
    assert page.is_file() and "SELECTOR_NOT_FOUND" in page.read_text()
    lines = done.stdout.splitlines()
    assert lines == [f"report {page}", page.as_uri()]
    other = tmp_path / "out" / "failed.html"
    other.parent.mkdir()
    done = cli(runs, tmp_path, "report", runs.failed, "-o", str(other))
    assert done.returncode == 0 and other.is_file() and done.stdout.splitlines()[-1] == other.as_uri()


@pytest.mark.parametrize("args", [("ffffffffffff",), ("RUN", "-o", "missing-dir/r.html")])
def test_report_refuses_in_one_line(runs: Runs, tmp_path: Path, args: tuple[str, ...]) -> None:
    args = tuple(runs.completed if a == "RUN" else a for a in args)
    done = cli(runs, tmp_path, "report", *args)
    assert done.returncode == 2
    no_traceback(done)
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and ("no run 'ffffffffffff'" in line or "missing-dir/r.html" in line)
    assert not list(tmp_path.glob("**/*.html"))


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_show_prints_the_command_that_opens_the_trace(runs: Runs, tmp_path: Path, terminal: bool) -> None:
    [trace] = [a for a in runs.runtime.store.steps.artifacts(runs.failed) if a.kind == "trace"]
    command = f"playwright show-trace {runs.runtime.settings.artifacts_dir.resolve() / trace.path}"
    env = {"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1", "COLUMNS": "250"} if terminal else {}
    shown = ANSI.sub("", cli(runs, tmp_path, "show", runs.failed, **env).stdout)
    if terminal:
        assert f"  trace     {command}" in shown.splitlines()
    else:
        facts = shown.split("\n\n")[0].splitlines()
        assert f"trace_command\t{command}" in facts
    untraced = ANSI.sub("", cli(runs, tmp_path, "show", runs.completed, **env).stdout)
    assert "show-trace" not in untraced
