"""What a command loads: ``--help`` and the commands that only read the store or the templates
import neither Playwright, Alembic, the MCP server nor Celery's machinery — each ``browserq``
process pays for what its command uses, not for every command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.helpers import browserq, no_traceback
from tests.conftest import REPO
from tests.support.workers import browserq_env

#: Runs the console script's main (what ``browserq ARGS`` runs) in this process, then writes the
#: heavy packages it loaded to the file named by argv[1].
_PROBE = """
import os, runpy, sys, json
out, sys.argv = sys.argv[1], ["browserq", *sys.argv[2:]]
def _exec(path, argv):  # `browserq worker` hands its process to Celery: stop just before
    print(json.dumps(argv))
    raise SystemExit(0)
os.execv = _exec
try:
    runpy.run_module("browserq.cli", run_name="__main__")
except SystemExit:
    pass
heavy = ("playwright", "patchright", "alembic", "mcp", "celery", "kombu", "sqlalchemy", "psycopg",
         "browserq.store", "browserq.sessions", "browserq.actions", "browserq.execute", "browserq.mcp")
with open(out, "w") as f:
    json.dump(sorted(h for h in heavy if h in sys.modules), f)
"""

#: Never loaded by the commands below.
RUNTIME = {"playwright", "patchright", "mcp", "celery", "kombu", "browserq.sessions", "browserq.actions",
           "browserq.execute", "browserq.mcp"}
#: Not loaded either while no run store is opened.
STORE = {"alembic", "sqlalchemy", "psycopg", "browserq.store"}


def loaded(tmp: Path, *args: str, **env: str) -> set[str]:
    return probe(tmp, *args, **env)[0]


def probe(tmp: Path, *args: str, **env: str) -> tuple[set[str], str]:
    """The heavy packages ``browserq ARGS`` imported, after checking it ran without a traceback."""
    out = tmp / "loaded.json"
    environ = browserq_env()
    environ.update({"BROWSERQ_DATABASE_URL": f"sqlite:///{tmp / 'cli.db'}",
                    "BROWSERQ_ARTIFACTS_DIR": str(tmp / "artifacts"),
                    "BROWSERQ_TEMPLATES_DIR": str(REPO / "templates"),
                    "PYTHONPATH": str(REPO), **env})
    done = subprocess.run([sys.executable, "-c", _PROBE, str(out), *args], cwd=tmp, env=environ,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    return set(json.loads(out.read_text())), done.stdout


@pytest.mark.parametrize("args", [
    ("--help",), ("run", "--help"), ("runs", "--help"), ("show", "--help"), ("mcp", "--help"),
    ("worker", "--help"), ("db", "upgrade", "--help"), ("templates", "list"), ("keygen",),
], ids=lambda args: "-".join(a.strip("-") for a in args))
def test_help_and_offline_commands_import_no_runtime_and_no_store(tmp_path: Path, args: tuple[str, ...]) -> None:
    assert loaded(tmp_path, *args) & (RUNTIME | STORE) == set()


def test_worker_hands_over_to_celery_before_importing_the_store_or_the_tasks(tmp_path: Path) -> None:
    """Celery imports the task package (store, runtime: ~1.2 CPU-s) after the exec; importing it
    before as well, to name two queues, doubled the cost of every worker's start."""
    heavy, printed = probe(tmp_path, "worker", "-c", "3", BROWSERQ_QUEUE="jobs")
    assert heavy & (RUNTIME | STORE) == set()
    argv = json.loads(printed.splitlines()[-1])
    assert argv[argv.index("-Q") + 1] == "jobs,jobs.sweep,jobs.webhooks"
    assert argv[argv.index("--concurrency") + 1] == "3"
    # An artifacts URL can name an unreachable bucket: then the store is loaded to check it first.
    checked, _ = probe(tmp_path, "worker", BROWSERQ_ARTIFACTS_URL=(tmp_path / "elsewhere").as_uri())
    assert "browserq.store" in checked and checked & RUNTIME == set()


@pytest.mark.parametrize("args", [("runs",), ("show", "0123abcd")], ids=["runs", "show"])
def test_store_commands_import_the_store_but_no_runtime(tmp_path: Path, args: tuple[str, ...]) -> None:
    heavy = loaded(tmp_path, *args)
    assert "browserq.store" in heavy and heavy & RUNTIME == set()
    # Alembic comes in to migrate a new database on open (BROWSERQ_AUTO_MIGRATE), and only then:
    # once the database is at the head the migration files declare, nothing imports it.
    assert "alembic" in heavy
    again = loaded(tmp_path, *args)
    assert "browserq.store" in again and "alembic" not in again
    assert "alembic" not in loaded(tmp_path, *args, BROWSERQ_AUTO_MIGRATE="false")


def test_the_store_loads_alembic_only_to_migrate(tmp_path: Path) -> None:
    code = ("import sys\nimport browserq.store as s\nassert 'alembic' not in sys.modules, 'imported'\n"
            "print(s.head_revision(), s.find_migrations_dir().name, 'alembic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    head, directory, alembic_loaded = done.stdout.split()
    newest = max((REPO / "alembic" / "versions").glob("0*.py"))
    assert f'revision: str = "{head}"' in newest.read_text()
    assert (directory, alembic_loaded) == ("alembic", "True")


@pytest.mark.parametrize(("args", "problem"), [
    (("--secrets", "bad.env"), "bad.env, line 1: expected NAME=value"),
    (("--http", "nowhere"), "--http takes HOST:PORT (e.g. 127.0.0.1:8931), got 'nowhere'"),
    (("--no-auth",), "--no-auth applies to --http only"),
], ids=["secrets", "address", "no-auth"])
def test_mcp_refuses_bad_arguments_before_importing_the_server(
    tmp_path: Path, args: tuple[str, ...], problem: str
) -> None:
    """``browserq mcp`` checks its arguments before it imports the MCP server and the runtime
    (~1.4 s): a bad secrets file or address is refused at once, with the server never loaded."""
    (tmp_path / "bad.env").write_text("password s3cret\n")
    heavy = loaded(tmp_path, "mcp", *args)
    assert heavy & RUNTIME == set()
    refused = browserq(tmp_path, "mcp", *args, timeout=60)
    assert refused.returncode == 2 and problem in refused.stderr, refused.stderr
    no_traceback(refused)
    assert "s3cret" not in refused.stdout + refused.stderr
