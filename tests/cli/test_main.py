"""The app and its entry point: help, settings errors, undecodable arguments, one-line refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import browserq, no_traceback


def test_help_lists_every_setting(tmp_path: Path) -> None:
    from browserq.settings import Settings

    done = browserq(tmp_path, "--help")
    assert done.returncode == 0
    for name in Settings.model_fields:
        assert f"BROWSERQ_{name.upper()}" in done.stdout

def test_bad_settings_are_reported_clearly(tmp_path: Path) -> None:
    done = browserq(tmp_path, "runs", BROWSERQ_STEP_RETRIES="lots")
    assert done.returncode == 2 and "BROWSERQ_STEP_RETRIES" in done.stderr and "Traceback" not in done.stderr
    settings_file = tmp_path / "settings.yaml"
    settings_file.write_text("databse_url: sqlite:///x.db\n")
    done = browserq(tmp_path, "runs", BROWSERQ_SETTINGS_FILE=str(settings_file))
    assert done.returncode == 2 and "databse_url" in done.stderr

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
    no_traceback(done)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    assert len(errors) == 1, done.stderr


def test_help_lists_the_commands_in_their_order() -> None:
    """The commands live in several modules; ``--help`` still lists them as it always has."""
    import typer

    from browserq.cli import app

    group = typer.main.get_command(app)
    assert group.list_commands(None) == [  # type: ignore[arg-type]
        "run", "enqueue", "demo", "locate", "worker", "beat", "runs", "show", "live", "mcp", "report", "cancel", "resolve", "sweep", "prune",
        "export", "batch",
        "proxies", "doctor", "settings", "keygen", "templates", "db", "identities", "schedules", "webhooks",
    ]
    groups = ("templates", "db", "identities", "schedules", "webhooks")
    sub = {name: group.commands[name].list_commands(None) for name in groups}  # type: ignore[attr-defined]
    assert sub == {"templates": ["list", "validate"], "db": ["upgrade"], "identities": ["list", "add", "disable"],
                   "schedules": ["list", "validate"], "webhooks": ["redeliver"]}


def test_an_argument_that_is_not_utf8_is_refused_in_one_line(tmp_path: Path) -> None:
    done = browserq(tmp_path, "\udcff")  # the byte 0xff on the command line
    assert done.returncode == 2
    no_traceback(done)
    assert done.stderr.strip() == r"error: argument '\xff' is not valid UTF-8 text"


def test_python_dash_m_is_the_same_command(tmp_path: Path) -> None:
    done = browserq(tmp_path, "--help")
    assert done.returncode == 0 and done.stdout.startswith("Usage: python -m browserq.cli ")
    assert "Commands:" in done.stdout and "identities" in done.stdout
