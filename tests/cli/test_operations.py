"""worker, beat, sweep, db, settings, proxies, identities, keygen."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import browserq
from tests.support.redis import REALISM_DB, redis_url


def test_db_upgrade_and_keygen(tmp_path: Path) -> None:
    done = browserq(tmp_path, "db", "upgrade")
    assert done.returncode == 0 and "revision" in done.stdout
    key = browserq(tmp_path, "keygen").stdout.strip()
    from cryptography.fernet import Fernet

    Fernet(key.encode())  # a valid key

def test_identities_and_proxies_commands(tmp_path: Path) -> None:
    done = browserq(tmp_path, "identities", "add", "alice", "--pool", "shoppers", "--region", "de")
    assert done.returncode == 0 and "alice" in done.stdout
    listed = browserq(tmp_path, "identities", "list")
    assert "alice" in listed.stdout and "shoppers" in listed.stdout
    proxies = browserq(tmp_path, "proxies", BROWSERQ_PROXIES="http://user:hunter22@127.0.0.1:3128",
                       BROWSERQ_PROXY_REDIS_URL=redis_url(REALISM_DB))
    assert proxies.returncode == 0 and "127.0.0.1:3128" in proxies.stdout and "hunter22" not in proxies.stdout
    shown = browserq(tmp_path, "settings", BROWSERQ_PROXIES="http://user:hunter22@127.0.0.1:3128")
    assert "hunter22" not in shown.stdout


def test_worker_argv_is_a_prefork_celery_worker_on_browserqs_queues(tmp_path: Path) -> None:
    import sys

    from browserq.cli import worker_argv
    from tests.conftest import make_settings

    settings = make_settings(tmp_path, queue="runs")
    argv = worker_argv(settings, 3, "DEBUG", ["--hostname", "w@h"])
    assert argv == [
        sys.executable, "-m", "celery", "-A", "browserq.celery_app:app", "worker",
        "--pool", "prefork", "--concurrency", "3", "--loglevel", "DEBUG",
        "-Q", "runs,runs.sweep,runs.webhooks", "-E", "--hostname", "w@h",
    ]
    # a -Q with nothing after it adds nothing (Celery itself will complain about the rest)
    assert worker_argv(settings, 1, "INFO", ["-Q"])[-3:] == ["-Q", "runs,runs.sweep,runs.webhooks", "-E"]


def test_the_sweepers_queue_cannot_be_excluded(tmp_path: Path) -> None:
    done = browserq(tmp_path, "worker", "-X", "browserq.sweep")
    assert done.returncode == 2
    assert done.stderr.startswith("error: the sweeper's queue 'browserq.sweep' cannot be excluded")


def test_settings_hides_the_secret_key(tmp_path: Path) -> None:
    from tests.conftest import TEST_SECRET_KEY

    shown = browserq(tmp_path, "settings", BROWSERQ_SECRET_KEY=TEST_SECRET_KEY)
    assert shown.returncode == 0 and "BROWSERQ_SECRET_KEY" in shown.stdout
    assert TEST_SECRET_KEY not in shown.stdout and "(set)" in shown.stdout


@pytest.mark.parametrize("command", [("proxies",), ("identities", "list")])
def test_listing_commands_succeed_on_an_empty_store(tmp_path: Path, command: tuple[str, ...]) -> None:
    done = browserq(tmp_path, *command)
    assert done.returncode == 0, done.stderr
