"""The store the CLI opens: a database URL that can never work fails at once, in one line."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.cli.helpers import browserq, no_traceback
from tests.support.http import free_port


@pytest.mark.parametrize("what", ["database", "role"])
def test_a_permanent_database_error_is_not_retried(what: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

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
    real_connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

    def counting(cls: type, *args: object, **kwargs: object) -> object:
        connects.append(args)  # every attempt, the ones that fail included
        return real_connect(cls, *args, **kwargs)

    # The store's own do_connect hook makes the connection (with its limits), so the attempts
    # are counted where every psycopg connection is made.
    monkeypatch.setattr(psycopg.Connection, "connect", classmethod(counting))
    try:
        with pytest.raises(StoreError) as caught:
            store.schema.upgrade()
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
    no_traceback(done)
    assert "retrying" not in done.stdout + done.stderr  # the store did not back off and retry
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and f'"{missing}" does not exist' in lines[0]

def test_a_sqlite_path_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    done = browserq(tmp_path, "runs", BROWSERQ_DATABASE_URL=f"sqlite:///{blocker}/sub/x.db")
    assert done.returncode == 2
    no_traceback(done)
    assert "cannot create its folder" in done.stderr


@pytest.mark.parametrize("command", [("runs",), ("show", "abc"), ("cancel", "abc"), ("db", "upgrade")],
                         ids=["runs", "show", "cancel", "db-upgrade"])
def test_a_database_nobody_listens_on_is_one_line_at_once(tmp_path: Path, command: tuple[str, ...]) -> None:
    """A refused connection is said at once, in one line, like `doctor` says it: no minute of
    "retrying" warnings (the worker's retry window is for workers). The old code took 65 s."""
    url = f"postgresql://postgres:hunter2@127.0.0.1:{free_port()}/test"
    done = browserq(tmp_path, *command, BROWSERQ_DATABASE_URL=url, timeout=30)
    assert done.returncode == 2, done.stderr
    no_traceback(done)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ") and "is unavailable: connection failed" in lines[0]
    assert "Connection refused" in lines[0] and "browserq doctor" in lines[0] and "hunter2" not in lines[0]


def test_a_sqlite_file_that_cannot_be_opened_is_one_line_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.db"
    folder.mkdir()
    done = browserq(tmp_path, "runs", BROWSERQ_DATABASE_URL=f"sqlite:///{folder}", timeout=30)
    assert done.returncode == 2
    no_traceback(done)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "unable to open database file" in lines[0], lines


def test_a_run_id_prefix_must_name_exactly_one_run(tmp_path: Path, capsys) -> None:
    import typer

    from browserq.cli.services import resolve_run_id

    class Runs:
        """The one store method resolve_run_id asks."""

        def run_ids_starting_with(self, prefix: str) -> list[str]:
            ids = ["abc123" + "0" * 26, "abd456" + "0" * 26, "abd789" + "0" * 26]
            return [i for i in ids if i.startswith(prefix)]

    assert resolve_run_id(Runs(), "abc") == "abc123" + "0" * 26
    for prefix, message in (("abd", "matches several runs (abd456000000, abd789000000…)"),
                            ("zz", "no run 'zz'; list recent ones with `browserq runs`")):
        with pytest.raises(typer.Exit) as caught:
            resolve_run_id(Runs(), prefix)
        assert caught.value.exit_code == 2 and message in capsys.readouterr().err


def test_the_database_url_is_shown_without_its_password(tmp_path: Path) -> None:
    from browserq.cli.services import masked_db
    from tests.conftest import make_settings

    settings = make_settings(tmp_path, database_url="postgresql+psycopg://bq:hunter22@db:5432/browserq")
    shown = masked_db(settings)
    assert "hunter22" not in shown and "db:5432/browserq" in shown
