"""Running the `browserq` command as a user would: its own process, SQLite, no servers.

The process is forked from a zygote that imported browserq once (:mod:`tests.support.cli_zygote`):
the same environment, working directory, output and exit code as ``python -m browserq.cli``,
without ~0.8 CPU-s of imports per command (``TEST_CLI_ZYGOTE=0``: each one afresh)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import REPO
from tests.support.cli_zygote import browserq_command
from tests.support.workers import browserq_env

#: Terminal colour and cursor codes, stripped to compare text.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def browserq(tmp: Path, *args: str, timeout: float = 180, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m browserq.cli ARGS`` in ``tmp`` with its own database and artifacts, the
    repository's templates, and ``env`` on top of an environment without BROWSERQ_* variables."""
    environ = browserq_env()
    environ.update({"BROWSERQ_DATABASE_URL": f"sqlite:///{tmp / 'cli.db'}",
                    "BROWSERQ_ARTIFACTS_DIR": str(tmp / "artifacts"),
                    "BROWSERQ_TEMPLATES_DIR": str(REPO / "templates"),
                    "COLUMNS": "200", "PYTHONPATH": str(REPO), **env})
    return browserq_command(args, env=environ, cwd=tmp, timeout=timeout)


def no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    """Neither Python's traceback nor Rich's boxed one reached the user."""
    text = done.stdout + done.stderr
    assert "Traceback" not in text and "╭─" not in text, text[-2000:]
