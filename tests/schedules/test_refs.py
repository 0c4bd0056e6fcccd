"""``{file: …}`` and ``{env: …}`` references: only regular files, bounded, and never a value in
an error — through ``browserq schedules validate`` (what beat and ``doctor`` run too) and
through a fire, whose refusal is beat's log line."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import structlog

from browserq.errors import ParamError
from browserq.schedules.fire import fire_logged
from tests.conftest import REPO, TEST_SECRET_KEY
from tests.schedules.conftest import write_schedules
from tests.schedules.test_fire import SLOT, entry, queue  # noqa: F401 (queue: a fixture)
from tests.support.workers import browserq_env

#: A line of /etc/shadow and a webhook secret: what must never reach a terminal or a log.
SHADOW = "root:$6$Zq1saltsalt$Hq2hashhashhashhash:19000:0:99999:7:::"
WEBHOOK_SECRET = "whsec-Kc9LmN0pQr7sTuVw"
#: The address space `schedules validate` may take: the old code read /dev/zero past it.
MEMORY_LIMIT = 3 * 1024**3


def validate(
    tmp_path: Path, templates_dir: Path, body: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """``browserq schedules validate`` as a subprocess with a memory ceiling (a read that does
    not stop fails fast instead of taking the machine's memory) and a timeout (a FIFO)."""
    environ = browserq_env()
    environ.update(
        {
            "BROWSERQ_TEMPLATES_DIR": str(templates_dir),
            "BROWSERQ_SECRET_KEY": TEST_SECRET_KEY,
            "BROWSERQ_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
            "PYTHONPATH": str(REPO),
            "BROWSERQ_SCHEDULES_FILE": str(write_schedules(tmp_path, body)),
            "COLUMNS": "200",
            **env,
        }
    )

    def ceiling() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    return subprocess.run(
        [sys.executable, "-m", "browserq.cli", "schedules", "validate"],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=ceiling,
    )


def errors(done: subprocess.CompletedProcess[str], tmp_path: Path) -> list[str]:
    prefix = f"error: {tmp_path / 'schedules.yaml'}: "
    return [
        line.removeprefix(prefix) for line in done.stderr.splitlines() if line.startswith("error:")
    ]


def test_a_reference_reads_only_a_regular_file_of_bounded_size(
    tmp_path: Path, templates_dir: Path
) -> None:
    fifo, large = tmp_path / "fifo", tmp_path / "large"
    os.mkfifo(fifo)
    large.write_text("x" * (64 * 1024 + 1))
    done = validate(
        tmp_path,
        templates_dir,
        f"""
        schedules:
          - {{name: zero, template: login, params: {{base_url: "http://127.0.0.1/", password: {{file: /dev/zero}}}}, every: 1h}}
          - {{name: fifo, template: login, params: {{base_url: "http://127.0.0.1/", password: {{file: {fifo}}}}}, every: 1h}}
          - {{name: large, template: login, params: {{base_url: "http://127.0.0.1/", password: {{file: {large}}}}}, every: 1h}}
          - {{name: proc, template: login, params: {{base_url: "http://127.0.0.1/", password: {{file: /proc/self/environ}}}}, every: 1h}}
          - {{name: dir, template: login, params: {{base_url: "http://127.0.0.1/", password: {{file: {tmp_path}}}}}, every: 1h}}
    """,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    regular = "a reference reads a regular file (e.g. a mounted secret)"
    assert errors(done, tmp_path) == [
        f"line 2: schedule 'zero': param 'password': file /dev/zero is under /dev, not a regular file; {regular}",
        f"line 3: schedule 'fifo': param 'password': file {fifo} is not a regular file (a directory, FIFO, socket "
        f"or device); {regular}",
        f"line 4: schedule 'large': param 'password': file {large} is larger than 64 KiB, the limit of a "
        "referenced value",
        f"line 5: schedule 'proc': param 'password': file /proc/self/environ is under /proc, not a regular file; "
        f"{regular}",
        f"line 6: schedule 'dir': param 'password': file {tmp_path} is not a regular file (a directory, FIFO, "
        f"socket or device); {regular}",
    ]
    assert "Traceback" not in done.stderr


def test_no_error_shows_a_referenced_value(tmp_path: Path, templates_dir: Path) -> None:
    (tmp_path / "shadow").write_text(SHADOW + "\n")
    (tmp_path / "pages").write_text("9\n")
    done = validate(
        tmp_path,
        templates_dir,
        f"""
        schedules:
          - name: shadow
            template: login
            params: {{base_url: {{file: {tmp_path}/shadow}}, password: {{env: BROWSERQ_WEBHOOK_SECRET}},
                      pages: {{file: {tmp_path}/pages}}}}
            every: 1h
          - {{name: webhook, template: ping, params: {{url: {{env: BROWSERQ_WEBHOOK_SECRET}}}}, every: 1h}}
    """,
        BROWSERQ_WEBHOOK_SECRET=WEBHOOK_SECRET,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    text = done.stdout + done.stderr
    for piece in (SHADOW, "Zq1saltsalt", "19000:0:99999", WEBHOOK_SECRET, "Kc9LmN0p", "whsec"):
        assert piece not in text, text
    hidden = "does not pass the template's check; the value is not shown: a referenced value may be a secret"
    found = errors(done, tmp_path)
    assert (
        f"line 2: schedule 'shadow': template login@1.0.0: param 'base_url': the value of {{file: {tmp_path}/shadow}} "
        f"{hidden}" in found
    )
    assert (
        f"line 2: schedule 'shadow': template login@1.0.0: param 'pages': the value of {{file: {tmp_path}/pages}} "
        f"{hidden}" in found
    )
    assert (
        f"line 7: schedule 'webhook': template ping@1.0.0: param 'url': the value of {{env: BROWSERQ_WEBHOOK_SECRET}} "
        f"{hidden}" in found
    )
    assert len(found) == 3, found


def test_beat_logs_a_refused_fire_without_the_referenced_value(queue: str, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv("SCHED_REFS_SHADOW", SHADOW)
    shadow = entry(
        "{name: shadow, template: ping, params: {url: {env: SCHED_REFS_SHADOW}}, every: 5m}"
    )
    with structlog.testing.capture_logs() as logs:
        assert fire_logged(shadow, SLOT) is None
    (line,) = [e for e in logs if e["event"] == "schedule slot not submitted"]
    assert line["error"] == ParamError.__name__ and "{env: SCHED_REFS_SHADOW}" in line["reason"]
    assert "Zq1saltsalt" not in repr(logs) and "19000" not in repr(logs)
