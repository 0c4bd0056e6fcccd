"""The CLI tests' zygote (tests/support/cli_zygote.py) is a faithful stand-in for a fresh
``python -m browserq.cli`` process: the same output, colours, exit code, stdin and working
directory — else every CLI test would be testing the zygote."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.helpers import ANSI
from tests.conftest import REPO
from tests.support.cli_zygote import browserq_command
from tests.support.workers import browserq_env

CASES = {
    "help": (["--help"], {}),
    "usage error": (["runs", "--no-such-option"], {}),
    "empty store": (["runs"], {}),
    "coloured table": (["templates", "list"], {"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1", "COLUMNS": "150"}),
    "unknown template": (["run", "no_such_template"], {}),
    "param from stdin": (["run", "quotes", "-p", "max_pages=@-"], {}),
}
STDIN = "fortytwo\n"


def environment(tmp: Path, **extra: str) -> dict[str, str]:
    environ = browserq_env()
    return {**environ, "BROWSERQ_DATABASE_URL": f"sqlite:///{tmp / 'cli.db'}",
            "BROWSERQ_TEMPLATES_DIR": str(REPO / "templates"), "PYTHONPATH": str(REPO), "COLUMNS": "100",
            **extra}


@pytest.mark.parametrize("case", list(CASES))
def test_a_forked_command_prints_and_exits_as_a_fresh_process(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, extra = CASES[case]
    given = STDIN if "max_pages=@-" in args else None
    outcomes = []
    for zygote in ("1", "0"):  # forked, then a fresh process
        where = tmp_path / f"zygote{zygote}"
        where.mkdir()
        monkeypatch.setenv("TEST_CLI_ZYGOTE", zygote)
        done = browserq_command(args, env=environment(where, **extra), cwd=where, input=given, timeout=120)
        assert isinstance(done, subprocess.CompletedProcess)
        outcomes.append((done.returncode, done.stdout.replace(str(where), "WHERE"),
                         done.stderr.replace(str(where), "WHERE")))
    forked, fresh_process = outcomes
    assert forked == fresh_process
    if case == "coloured table":
        assert ANSI.search(forked[1]), "FORCE_COLOR reached the forked command's consoles"
    if case == "param from stdin":
        assert forked[0] == 2 and "got 'fortytwo'" in forked[2], forked
    if case == "usage error":
        assert forked[0] == 2 and "python -m browserq.cli" in ANSI.sub("", forked[2])
