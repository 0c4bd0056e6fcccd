"""The `browserq` command on day one: bad input is one clear line (never a traceback), a wrong
database URL fails at once, piped output is plain and complete, values are printed verbatim."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from tests.conftest import TEST_SECRET_KEY
from tests.test_cli import browserq

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _no_traceback(done) -> None:
    text = done.stdout + done.stderr
    assert "Traceback" not in text and "╭─" not in text, text[-2000:]


# --- bad CLI input ------------------------------------------------------------------------------
def test_runs_rejects_a_bad_status_with_the_valid_ones(tmp_path: Path) -> None:
    done = browserq(tmp_path, "runs", "--status", "bogus")
    assert done.returncode == 2
    _no_traceback(done)
    error = [line for line in done.stderr.splitlines() if line.startswith("Error")]
    assert len(error) == 1 and "'bogus' is not one of" in error[0]
    for status in ("queued", "running", "retrying", "completed", "failed", "cancelled", "needs_review"):
        assert f"'{status}'" in error[0]
    assert browserq(tmp_path, "runs", "--status", "FAILED").returncode == 0  # any case


def test_status_choices_are_the_stores_statuses() -> None:
    from browserq.cli import RunStatusChoice
    from browserq.store.models import RunStatus

    assert [c.value for c in RunStatusChoice] == [s.value for s in RunStatus]


@pytest.mark.parametrize(
    "args",
    [
        ("runs", "-n", "0"),
        ("runs", "-n", "99999999999999999999999"),
        ("runs", "--template", "\udcff"),  # the bytes b"\xff": not UTF-8
        ("identities", "add", "a" * 150),
        ("identities", "add", "bob", "--region", "x" * 40),
    ],
    ids=["limit-0", "limit-huge", "template-not-utf8", "long-identity", "long-region"],
)
def test_bad_cli_values_are_one_clear_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = browserq(tmp_path, *args)
    assert done.returncode == 2, done.stdout + done.stderr
    _no_traceback(done)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    assert len(errors) == 1, done.stderr


def test_an_unreadable_template_file_is_one_line_in_validate(tmp_path: Path) -> None:
    bad = tmp_path / "nul.yaml"
    bad.write_bytes(b"name: x\nversion: 1.0.0\nsteps: [\x00]\n")
    done = browserq(tmp_path, "templates", "validate", str(bad))
    assert done.returncode == 1
    _no_traceback(done)
    assert "nul.yaml" in done.stderr and "invalid YAML" in done.stderr and "#x0000" in done.stderr


# --- a database URL that can never work -----------------------------------------------------------
@pytest.mark.parametrize("what", ["database", "role"])
def test_a_permanent_database_error_is_not_retried(what: str) -> None:
    from sqlalchemy import event

    from browserq.errors import StoreError
    from browserq.store import Store

    missing = f"browserq_missing_{uuid.uuid4().hex[:8]}"
    url = (
        f"postgresql+psycopg://postgres@127.0.0.1:5432/{missing}"
        if what == "database"
        else f"postgresql+psycopg://{missing}@127.0.0.1:5432/postgres"
    )
    store = Store(url, retry_window_s=60)
    connects: list[object] = []
    event.listen(store.engine, "do_connect", lambda *args: connects.append(args))
    try:
        with pytest.raises(StoreError) as caught:
            store.upgrade()
    finally:
        store.dispose()
    assert len(connects) == 1  # tried once: no retry loop for an error no retry can fix
    message = str(caught.value)
    assert f'{what} "{missing}" does not exist' in message
    assert "cannot be used" in message and "BROWSERQ_DATABASE_URL" in message
    assert "gave up after" not in message


def test_the_cli_says_a_permanent_database_error_in_one_line(tmp_path: Path) -> None:
    missing = f"browserq_missing_{uuid.uuid4().hex[:8]}"
    done = browserq(tmp_path, "runs", BROWSERQ_DATABASE_URL=f"postgresql://postgres@127.0.0.1:5432/{missing}",
                    BROWSERQ_LOG_LEVEL="INFO")
    assert done.returncode == 2
    _no_traceback(done)
    assert "retrying" not in done.stdout + done.stderr  # the store did not back off and retry
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and f'"{missing}" does not exist' in lines[0]


def test_a_sqlite_path_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    done = browserq(tmp_path, "runs", BROWSERQ_DATABASE_URL=f"sqlite:///{blocker}/sub/x.db")
    assert done.returncode == 2
    _no_traceback(done)
    assert "cannot create its folder" in done.stderr


# --- piped output, --json, verbatim values -------------------------------------------------------
def test_piped_runs_and_show_are_plain_and_complete(tmp_path: Path, site) -> None:
    failed = browserq(tmp_path, "run", "quotes", "-p", f"start_url={site.url}/status/500", COLUMNS="")
    assert failed.returncode == 1
    done = browserq(tmp_path, "run", "quotes", "-p", f"start_url={site.url}/quotes/", "-p", "max_pages=2",
                    COLUMNS="")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: step 1: REPEAT_MAX_REACHED" in done.stdout  # 2 of 5 pages: said so
    run_id = done.stdout.split("browserq show ")[-1].split()[0]

    listed = browserq(tmp_path, "runs", COLUMNS="")  # no COLUMNS: Rich would assume 80
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert rows[0] == ["run_id", "template", "status", "attempt", "created_utc", "took_s", "error", "warnings"]
    by_id = {row[0]: row for row in rows[1:]}
    assert by_id[run_id][2] == "completed" and "REPEAT_MAX_REACHED" in by_id[run_id][7]
    [bad] = [row for row in rows[1:] if row[2] == "failed"]
    assert bad[6] == f"HTTP_5XX: {site.url}/status/500 answered HTTP 500"  # whole, on one line

    as_json = json.loads(browserq(tmp_path, "runs", "--json").stdout)
    assert {r["id"] for r in as_json} == set(by_id) and all("secrets" not in r for r in as_json)
    assert [w["code"] for w in next(r for r in as_json if r["id"] == run_id)["warnings"]] == ["REPEAT_MAX_REACHED"]

    shown = browserq(tmp_path, "show", run_id, COLUMNS="").stdout
    facts = dict(line.split("\t", 1) for line in shown.split("\n\n")[0].splitlines())
    assert facts["run"] == run_id and facts["status"] == "completed" and facts["template"] == "quotes@1.2.0"
    assert facts["warning"].startswith("step 1: REPEAT_MAX_REACHED: repeat 'pages' stopped at max=2")
    steps = shown.split("\nSteps\n")[1].split("\n\n")[0].splitlines()
    assert steps[0].split("\t")[:3] == ["step", "id", "action"]
    assert steps[1].split("\t")[-1] == f"{site.url}/quotes/"  # the URL in full
    outputs = dict(line.split("\t", 1) for line in shown.split("\nOutputs\n")[1].splitlines())
    assert len(json.loads(outputs["quotes"])) == 20


BRACKETS = """name: brackets
version: 1.0.0
params:
  password: {type: secret, required: true}
settings: {allow_eval: true}
steps:
  - action: eval
    expression: "'[bold]loud[/bold] [secret:x] [link=http://evil]click[/link]'"
    into: page_text
  - action: assert
    url: "http://nowhere.invalid/*"
    timeout_s: 1
    message: "wanted [red]this[/red]"
"""


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_show_prints_secrets_masks_and_page_text_verbatim(tmp_path: Path, terminal: bool) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "brackets.yaml").write_text(BRACKETS)
    env = {"BROWSERQ_TEMPLATES_DIR": str(templates), "BROWSERQ_SECRET_KEY": TEST_SECRET_KEY}
    done = browserq(tmp_path, "run", "brackets", "-p", "password=hunter2-xyz", **env)
    assert done.returncode == 1, done.stdout + done.stderr
    run_id = done.stdout.split("browserq show ")[-1].split()[0]
    if terminal:
        env |= {"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1", "COLUMNS": "250"}
    shown = browserq(tmp_path, "show", run_id, **env)
    assert shown.returncode == 0, shown.stderr
    text = ANSI.sub("", shown.stdout)
    assert '"password": "[secret:password]"' in text  # the mask, not ""
    assert "[bold]loud[/bold] [secret:x] [link=http://evil]click[/link]" in text
    assert "wanted [red]this[/red]" in text  # the step's error, as the page/template said it
    assert "hunter2-xyz" not in text
    assert ("┃" in text) is terminal  # the table layout only on a terminal
