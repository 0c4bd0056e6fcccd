"""How the CLI prints: piped output is plain and complete, values are printed verbatim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import ANSI, browserq
from tests.conftest import TEST_SECRET_KEY


def test_piped_runs_and_show_are_plain_and_complete(tmp_path: Path, site) -> None:
    failed = browserq(tmp_path, "run", "quotes", "-p", f"start_url={site.url}/status/500", COLUMNS="")
    assert failed.returncode == 1
    done = browserq(tmp_path, "run", "quotes", "-p", f"start_url={site.url}/quotes/", "-p", "max_pages=2",
                    COLUMNS="")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: step 1: REPEAT_MAX_REACHED" in done.stdout  # 2 of 5 pages: said so
    run_id = done.stdout.split("browserq show ")[-1].split()[0]
    # `run` itself, piped: lines never folded, each output one `name<TAB>JSON` line (no squeezed table)
    ran = dict(line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)
    quotes = json.loads(ran["quotes"])
    assert len(quotes) == 20 and quotes[0]["author"] == "Albert Einstein"
    assert any(line.startswith("  HTTP_5XX at step ") and line.endswith(f"{site.url}/status/500 answered HTTP 500")
               for line in failed.stdout.splitlines()), failed.stdout

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


def test_a_plain_field_never_breaks_its_line(capsys) -> None:
    from browserq.cli.render import tsv

    tsv("a\tb", "line one\nline two", None, 3)
    assert capsys.readouterr().out == "a b\tline one line two\t\t3\n"


@pytest.mark.parametrize(("value", "shown"), [(None, ""), (12.4, "12 ms"), (9_999.0, "9999 ms"), (12_345.0, "12.3 s")])
def test_durations_read_as_people_say_them(value: float | None, shown: str) -> None:
    from browserq.cli.render import ms

    assert ms(value) == shown


def test_friendly_errors_turn_browserq_errors_and_value_errors_into_exit_2(capsys) -> None:
    import typer

    from browserq.cli.render import friendly_errors
    from browserq.errors import ConfigError

    @friendly_errors
    def command(exc: Exception) -> None:
        """A command that fails."""
        raise exc

    for exc in (ConfigError("set BROWSERQ_X [not markup]"), ValueError("bad value")):
        with pytest.raises(typer.Exit) as caught:
            command(exc)
        assert caught.value.exit_code == 2
        assert capsys.readouterr().err.strip() == f"error: {exc}"
    with pytest.raises(KeyError):  # a bug stays a traceback
        command(KeyError("x"))
    assert command.__doc__ == "A command that fails." and command.__name__ == "command"


def test_records_become_a_table_of_the_first_rows_and_other_values_one_line() -> None:
    from rich.console import Console
    from rich.table import Table

    from browserq.cli.render import output_table

    rows = [{"a": i, "b": [1, 2]} for i in range(12)]
    table = output_table("items", rows)
    assert isinstance(table, Table) and table.row_count == 10
    assert table.caption == "… 2 more (browserq show --json)"
    console = Console(width=100, record=True)
    console.print(output_table("total", {"n": [1, "x"]}))
    assert console.export_text().strip() == 'total: {"n": [1, "x"]}'
