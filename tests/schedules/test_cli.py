"""``browserq schedules validate|list`` and ``browserq beat``'s check, run as a user runs them."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.cli.helpers import ANSI, browserq, no_traceback
from tests.conftest import TEST_SECRET_KEY
from tests.schedules.conftest import write_schedules
from tests.support.workers import CELERY, browserq_env

GOOD = """
schedules:
  - {name: ping-5m, template: ping, params: {url: "http://127.0.0.1/"}, every: 5m}
  - name: login-nightly
    template: login@1.0
    params: {base_url: "http://127.0.0.1/", password: {env: SCHED_CLI_PW}}
    cron: "30 2 * * *"
    timezone: Europe/Berlin
    queue: tenant-a
  - {name: later, template: nosuch, every: 1h, enabled: false}
"""

BAD = """
schedules:
  - {name: ping-5m, template: ping, params: {url: "http://127.0.0.1/"}, every: 5m}
  - {name: inline, template: login, params: {base_url: "http://127.0.0.1/", password: hunter22}, every: 1h}
  - {name: typo, template: ping, params: {url: "http://127.0.0.1/"}, evry: 1h}
  - {name: missing, template: nosuch, every: 1h}
"""
BAD_LINES = [
    "error: {file}: line 3: schedule 'inline': param 'password' is secret in template login@1.0.0: "
    "give it by reference, {env: VAR} or {file: /path}, never inline",
    "error: {file}: line 4: schedule 'typo': unknown field 'evry' (an entry has: name, template, params, every, "
    "cron, timezone, queue, enabled)",
    "error: {file}: line 5: schedule 'missing': no template named 'nosuch'; available: login, ping",
]


def env(tmp_path: Path, templates_dir: Path, body: str) -> dict[str, str]:
    return {"BROWSERQ_TEMPLATES_DIR": str(templates_dir), "BROWSERQ_SECRET_KEY": TEST_SECRET_KEY,
            "BROWSERQ_SCHEDULES_FILE": str(write_schedules(tmp_path, body)), "SCHED_CLI_PW": "pw"}


def expected(tmp_path: Path) -> list[str]:
    return [line.replace("{file}", str(tmp_path / "schedules.yaml")) for line in BAD_LINES]


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


def test_validate_prints_ok_per_entry(tmp_path: Path, templates_dir: Path) -> None:
    done = browserq(tmp_path, "schedules", "validate", **env(tmp_path, templates_dir, GOOD))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "OK ping-5m  ping  every 5m",
        "OK login-nightly  login@1.0  cron 30 2 * * *",
        "OK later  disabled (shape checked only; enable it to check it against its template)",
    ]


def test_validate_names_every_bad_entry_and_its_problem(tmp_path: Path, templates_dir: Path) -> None:
    done = browserq(tmp_path, "schedules", "validate", **env(tmp_path, templates_dir, BAD))
    assert done.returncode == 1
    no_traceback(done)
    assert error_lines(done.stderr) == expected(tmp_path)
    assert done.stdout.splitlines() == ["OK ping-5m  ping  every 5m"]
    assert "hunter22" not in done.stdout + done.stderr


def test_validate_without_a_schedules_file_says_how_to_give_one(tmp_path: Path) -> None:
    done = browserq(tmp_path, "schedules", "validate")
    assert done.returncode == 2 and "set BROWSERQ_SCHEDULES_FILE" in done.stderr
    no_traceback(done)


def test_list_shows_each_entry_with_its_next_fire_time(tmp_path: Path, templates_dir: Path) -> None:
    asked_at = datetime.now(UTC)  # the next fire is after the moment the CLI looked, not after this test's "now"
    done = browserq(tmp_path, "schedules", "list", **env(tmp_path, templates_dir, GOOD))
    assert done.returncode == 0, done.stderr
    header, *rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert header == ["name", "template", "schedule", "timezone", "queue", "enabled", "next fire"]
    assert [row[:6] for row in rows] == [
        ["ping-5m", "ping", "every 5m", "UTC", "(default)", "yes"],
        ["login-nightly", "login@1.0", "cron 30 2 * * *", "Europe/Berlin", "tenant-a", "yes"],
        ["later", "nosuch", "every 1h", "UTC", "(default)", "no"],
    ]
    every5, nightly = (datetime.fromisoformat(row[6]) for row in rows[:2])
    assert every5 > asked_at and every5.minute % 5 == 0 and every5.second == 0
    assert every5.utcoffset() == timedelta(0)
    assert (nightly.hour, nightly.minute) == (2, 30) and str(nightly.tzinfo) in ("UTC+01:00", "UTC+02:00")
    assert rows[2][6] == ""  # disabled: never fires
    table = browserq(tmp_path, "schedules", "list", FORCE_COLOR="1", **env(tmp_path, templates_dir, GOOD))
    text = ANSI.sub("", table.stdout)
    assert "Schedules in" in text and "login-nightly" in text and "Europe/Berlin" in text and "next fire" in text


def test_list_refuses_a_file_that_does_not_parse(tmp_path: Path, templates_dir: Path) -> None:
    done = browserq(tmp_path, "schedules", "list", **env(tmp_path, templates_dir, BAD))
    assert done.returncode == 2
    assert error_lines(done.stderr) == [line for line in expected(tmp_path) if "'typo'" in line]


def test_beat_refuses_a_bad_file_before_it_starts(tmp_path: Path, templates_dir: Path) -> None:
    done = browserq(tmp_path, "beat", "--loglevel", "INFO", **env(tmp_path, templates_dir, BAD))
    assert done.returncode == 2
    no_traceback(done)
    assert error_lines(done.stderr) == expected(tmp_path)
    assert "celery beat" not in done.stdout + done.stderr  # refused before Celery was started


def test_celery_beat_itself_refuses_a_bad_file(tmp_path: Path, templates_dir: Path) -> None:
    """``celery -A browserq.celery_app beat`` (no browserq CLI in front) checks the file too."""
    variables = {**env(tmp_path, templates_dir, BAD), "BROWSERQ_DATABASE_URL": f"sqlite:///{tmp_path / 'b.db'}",
                 "BROWSERQ_ARTIFACTS_DIR": str(tmp_path / "artifacts")}
    done = subprocess.run([*CELERY, "beat", "--loglevel", "INFO"], env=browserq_env(variables), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert error_lines(done.stderr) == expected(tmp_path)
    assert "Traceback" not in done.stderr
