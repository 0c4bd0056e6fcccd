"""The `browserq` command, run as a user would run it: a subprocess, SQLite, no servers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def browserq(tmp: Path, *args: str, timeout: float = 180, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERQ_")}
    environ.update({"BROWSERQ_DATABASE_URL": f"sqlite:///{tmp / 'cli.db'}",
                    "BROWSERQ_ARTIFACTS_DIR": str(tmp / "artifacts"),
                    "BROWSERQ_TEMPLATES_DIR": str(REPO / "templates"),
                    "COLUMNS": "200", "PYTHONPATH": str(REPO), **env})
    return subprocess.run([sys.executable, "-m", "browserq.cli", *args], cwd=tmp, env=environ,
                          capture_output=True, text=True, timeout=timeout)


def test_help_lists_every_setting(tmp_path: Path) -> None:
    from browserq.settings import Settings

    done = browserq(tmp_path, "--help")
    assert done.returncode == 0
    for name in Settings.model_fields:
        assert f"BROWSERQ_{name.upper()}" in done.stdout


def test_run_show_and_runs(tmp_path: Path, site) -> None:
    done = browserq(tmp_path, "run", "quotes", "-p", f"start_url={site.url}/quotes/", "-p", "max_pages=2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "COMPLETED" in done.stdout and "quotes (20 records)" in done.stdout
    assert "✓" in done.stdout  # a line per finished step
    run_id = done.stdout.split("browserq show ")[-1].split()[0]
    shown = browserq(tmp_path, "show", run_id)
    assert shown.returncode == 0 and "Steps" in shown.stdout and "navigate" in shown.stdout
    listed = browserq(tmp_path, "runs")
    assert run_id[:12] in listed.stdout and "completed" in listed.stdout


def test_run_reports_bad_input_without_traceback(tmp_path: Path) -> None:
    done = browserq(tmp_path, "run", "quotes", "-p", "max_pages=0")
    assert done.returncode == 2
    assert "start_url" in done.stderr and "Traceback" not in done.stderr + done.stdout
    done = browserq(tmp_path, "run", "nope")
    assert done.returncode == 2 and "no template named 'nope'" in done.stderr


def test_failed_run_exits_1_and_shows_the_error(tmp_path: Path, site) -> None:
    done = browserq(tmp_path, "run", "quotes", "-p", f"start_url={site.url}/status/500")
    assert done.returncode == 1
    assert "HTTP_5XX" in done.stdout


def test_templates_validate_and_list(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nversion: 1.0.0\nsteps:\n  - action: navigate\n    url: file:///etc/passwd\n")
    done = browserq(tmp_path, "templates", "validate", str(bad))
    assert done.returncode == 1 and "file" in done.stderr and "line 5" in done.stderr
    done = browserq(tmp_path, "templates", "validate")
    assert done.returncode == 0 and "quotes@1.2.0" in done.stdout
    listed = browserq(tmp_path, "templates", "list")
    assert "login_form" in listed.stdout


def test_db_upgrade_and_keygen(tmp_path: Path) -> None:
    done = browserq(tmp_path, "db", "upgrade")
    assert done.returncode == 0 and "revision" in done.stdout
    key = browserq(tmp_path, "keygen").stdout.strip()
    from cryptography.fernet import Fernet

    Fernet(key.encode())  # a valid key


def test_bad_settings_are_reported_clearly(tmp_path: Path) -> None:
    done = browserq(tmp_path, "runs", BROWSERQ_STEP_RETRIES="lots")
    assert done.returncode == 2 and "BROWSERQ_STEP_RETRIES" in done.stderr and "Traceback" not in done.stderr
    settings_file = tmp_path / "settings.yaml"
    settings_file.write_text("databse_url: sqlite:///x.db\n")
    done = browserq(tmp_path, "runs", BROWSERQ_SETTINGS_FILE=str(settings_file))
    assert done.returncode == 2 and "databse_url" in done.stderr


@pytest.mark.slow
def test_demo_runs_every_bundled_template(tmp_path: Path) -> None:
    done = browserq(tmp_path, "demo", timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("COMPLETED") == 3
    assert "quotes: 50 items" in done.stdout
    assert (tmp_path / "cli.db").exists() and "Artifacts:" in done.stdout


def test_cancel_a_queued_run_and_show_its_history(tmp_path: Path, site) -> None:
    from browserq.runs import prepare_run, record_run
    from browserq.store import Store
    from browserq.templates import TemplateRegistry

    store = Store(f"sqlite:///{tmp_path / 'cli.db'}")
    store.upgrade()
    prepared = prepare_run(TemplateRegistry(REPO / "templates"), "quotes", {"start_url": f"{site.url}/quotes/"})
    record_run(store, prepared, secret_box=None)
    done = browserq(tmp_path, "cancel", prepared.run_id[:8], "--reason", "not today")
    assert done.returncode == 0 and "cancelled" in done.stdout
    assert store.get_run(prepared.run_id).status == "cancelled"
    shown = browserq(tmp_path, "show", prepared.run_id[:8])
    assert "cancelled" in shown.stdout and "not today" in shown.stdout
    again = browserq(tmp_path, "cancel", prepared.run_id)
    assert "already ended: cancelled" in again.stdout
    store.dispose()


def test_identities_and_proxies_commands(tmp_path: Path) -> None:
    done = browserq(tmp_path, "identities", "add", "alice", "--pool", "shoppers", "--region", "de")
    assert done.returncode == 0 and "alice" in done.stdout
    listed = browserq(tmp_path, "identities", "list")
    assert "alice" in listed.stdout and "shoppers" in listed.stdout
    proxies = browserq(tmp_path, "proxies", BROWSERQ_PROXIES="http://user:hunter22@127.0.0.1:3128",
                       BROWSERQ_PROXY_REDIS_URL="redis://127.0.0.1:6379/9")
    assert proxies.returncode == 0 and "127.0.0.1:3128" in proxies.stdout and "hunter22" not in proxies.stdout
    shown = browserq(tmp_path, "settings", BROWSERQ_PROXIES="http://user:hunter22@127.0.0.1:3128")
    assert "hunter22" not in shown.stdout


def test_readme_lists_every_setting() -> None:
    from browserq.settings import Settings

    readme = (REPO / "README.md").read_text()
    missing = [name for name in Settings.model_fields if f"`BROWSERQ_{name.upper()}`" not in readme]
    assert not missing, f"README's settings table lacks {missing}"
