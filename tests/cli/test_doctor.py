"""``browserq doctor`` against the real services: all green, then one thing broken at a time —
each gives ✗ on its own line, says what to do, and exits 1 (never a traceback)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from browserq.store import Store
from tests.cli.helpers import browserq, no_traceback
from tests.conftest import REPO, TEST_SECRET_KEY
from tests.support.http import free_port
from tests.support.redis import LIMITS_DB, redis_url

pytestmark = pytest.mark.full_chromium  # doctor's lines for the default engine (the shell's are tested by name)

SECRET_TEMPLATE = """name: needs_key
version: 1.0.0
params:
  password: {type: secret, required: true}
steps:
  - {action: navigate, url: "http://127.0.0.1:9/"}
"""
SCHEDULES = """schedules:
  - name: quotes-hourly
    template: quotes@1.2
    params: {start_url: "http://127.0.0.1:9/quotes/"}
    cron: "0 * * * *"
"""


@pytest.fixture(scope="module")
def migrated(pg_url: str) -> str:
    store = Store(pg_url)
    store.schema.upgrade()
    store.dispose()
    return pg_url


@pytest.fixture
def env(tmp_path: Path, migrated: str) -> dict[str, str]:
    """Settings under which every check passes: the repository's templates, a key, a schedules
    file, a migrated database, Redis as broker and for rate limits."""
    (tmp_path / "schedules.yml").write_text(SCHEDULES)
    return {
        "BROWSERQ_DATABASE_URL": migrated,
        "BROWSERQ_BROKER_URL": redis_url(0),
        "BROWSERQ_SECRET_KEY": TEST_SECRET_KEY,
        "BROWSERQ_TEMPLATES_DIR": str(REPO / "templates"),
        "BROWSERQ_ARTIFACTS_DIR": str(tmp_path / "artifacts"),
        "BROWSERQ_RATE_LIMITS": '{"example.com": "2/s"}',
        "BROWSERQ_LIMITS_REDIS_URL": redis_url(LIMITS_DB),
        "BROWSERQ_SCHEDULES_FILE": str(tmp_path / "schedules.yml"),
    }


def doctor(tmp: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = browserq(tmp, "doctor", *args, **env)
    no_traceback(done)
    return done


def lines(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """Each check's line, by its name (the text after the mark, up to two spaces)."""
    found = {}
    for line in done.stdout.splitlines():
        mark, rest = line[:1], line[2:]
        name = rest[:17].strip()
        found[name] = f"{mark} {rest[17:]}"
    return found


def test_all_green_against_the_real_services(tmp_path: Path, env: dict[str, str]) -> None:
    done = doctor(tmp_path, env, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    statuses = {check["name"]: check["status"] for check in report["checks"]}
    assert report["ok"] is True
    assert statuses.pop("chromium version") in ("ok", "warn")  # the host's Chromium may be older
    assert statuses == {name: "ok" for name in (
        "chromium", "browser launch", "database", "broker", "redis", "templates", "secret key",
        "artifacts", "schedules")}, report
    details = {check["name"]: check["detail"] for check in report["checks"]}
    assert "opened about:blank" in details["browser launch"]
    assert f"limits and beat lock: {redis_url(LIMITS_DB)} answers" in details["redis"]
    assert "wrote, read back and deleted" in details["artifacts"]
    assert not (tmp_path / "artifacts" / ".doctor").exists()  # the probe and its folder are gone

    text = doctor(tmp_path, env)
    assert text.returncode == 0
    shown = lines(text)
    assert shown["database"].startswith("✓") and "(current)" in shown["database"]
    assert len(text.stdout.splitlines()) == 10  # one line per check


def test_the_version_check_reads_what_playwright_expects(tmp_path: Path, env: dict[str, str]) -> None:
    from browserq.cli.doctor import playwright_chromium

    version, chromium = playwright_chromium()
    report = json.loads(doctor(tmp_path, env, "--json").stdout)
    (check,) = [c for c in report["checks"] if c["name"] == "chromium version"]
    assert version in check["detail"] and chromium.split(".")[0] in check["detail"]
    if check["status"] == "warn":  # this host's Chromium is another major: said, with what to do
        assert "BROWSERQ_CHROMIUM_PATH" in check["fix"]


def broken(tmp: Path, what: str) -> dict[str, str]:
    """One setting that breaks one check."""
    if what == "database":
        return {"BROWSERQ_DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/nope"}
    if what == "broker":
        return {"BROWSERQ_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0"}
    if what == "templates":
        templates = tmp / "templates"
        templates.mkdir()
        (templates / "broken.yaml").write_text("name: broken\nversion: 1.0.0\nsteps:\n  - action: fly\n")
        return {"BROWSERQ_TEMPLATES_DIR": str(templates), "BROWSERQ_SCHEDULES_FILE": ""}
    if what == "secret key":
        templates = tmp / "secret-templates"
        templates.mkdir()
        (templates / "needs_key.yaml").write_text(SECRET_TEMPLATE)
        return {"BROWSERQ_TEMPLATES_DIR": str(templates), "BROWSERQ_SECRET_KEY": "", "BROWSERQ_SCHEDULES_FILE": ""}
    if what == "artifacts":
        (tmp / "a-file").write_text("in the way")  # root may write anywhere: a file where a directory must be
        return {"BROWSERQ_ARTIFACTS_DIR": str(tmp / "a-file" / "artifacts")}
    assert what == "chromium"
    return {"BROWSERQ_CHROMIUM_PATH": str(tmp / "no-such-chromium")}


@pytest.mark.parametrize(("what", "says", "fix"), [
    ("database", "cannot reach postgresql+psycopg://postgres@127.0.0.1:", "fix BROWSERQ_DATABASE_URL"),
    ("broker", "cannot reach redis://127.0.0.1:", "fix BROWSERQ_BROKER_URL"),
    ("templates", "broken.yaml: line 4: ", "browserq templates validate"),
    ("secret key", "BROWSERQ_SECRET_KEY is not set, but needs_key@1.0.0 declares secret params", "browserq keygen"),
    ("artifacts", "cannot store artifacts in", "make it writable"),
    ("chromium", "no-such-chromium", "BROWSERQ_CHROMIUM_PATH"),
])
def test_each_failure_is_a_cross_on_its_line_and_exit_1(
    tmp_path: Path, env: dict[str, str], what: str, says: str, fix: str
) -> None:
    env = {**env, **broken(tmp_path, what)}
    env = {k: v for k, v in env.items() if v}  # "": unset
    done = doctor(tmp_path, env)
    assert done.returncode == 1, done.stdout + done.stderr
    shown = lines(done)
    assert shown[what].startswith("✗") and says in shown[what], done.stdout
    assert fix in shown[what].split(" → ", 1)[1], done.stdout
    crosses = [name for name, line in shown.items() if line.startswith("✗")]
    assert crosses == [what], done.stdout  # only what was broken
    if what == "chromium":
        assert shown["browser launch"].startswith("–") and shown["chromium version"].startswith("–")


def test_the_beat_locks_redis_is_checked(tmp_path: Path, env: dict[str, str]) -> None:
    """No rate limits, no proxies: the Redis that holds the beat lock is still checked — down, a
    beat fires nothing. A cross where a schedules file says beat runs, else a warning."""
    env = {k: v for k, v in env.items() if k != "BROWSERQ_RATE_LIMITS"}
    down = f"redis://127.0.0.1:{free_port()}/3"
    done = doctor(tmp_path, {**env, "BROWSERQ_LIMITS_REDIS_URL": down})
    assert done.returncode == 1, done.stdout
    shown = lines(done)
    assert shown["redis"].startswith(f"✗ beat lock: cannot reach {down}: "), done.stdout
    assert "a beat fires nothing while it is down" in shown["redis"]
    assert "BROWSERQ_LIMITS_REDIS_URL" in shown["redis"].split(" → ", 1)[1]
    assert [name for name, line in shown.items() if line.startswith("✗")] == ["redis"]
    no_beat = {k: v for k, v in env.items() if k != "BROWSERQ_SCHEDULES_FILE"}
    done = doctor(tmp_path, {**no_beat, "BROWSERQ_LIMITS_REDIS_URL": down})
    assert done.returncode == 0 and lines(done)["redis"].startswith("⚠ beat lock: cannot reach"), done.stdout
    fine = lines(doctor(tmp_path, env))["redis"]
    assert fine == f"✓ beat lock: {redis_url(LIMITS_DB)} answers", fine


def test_a_hung_server_is_a_cross_after_a_timeout_not_a_hang(tmp_path: Path, env: dict[str, str]) -> None:
    """A port that accepts connections and never answers (a listening socket nobody serves)."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        env = {**env, "BROWSERQ_BROKER_URL": f"redis://127.0.0.1:{port}/0"}
        done = doctor(tmp_path, env, "--json")
    assert done.returncode == 1
    (check,) = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "broker"]
    assert check["status"] == "fail" and "cannot reach" in check["detail"], check


def test_piped_output_is_one_plain_line_per_check(tmp_path: Path, env: dict[str, str]) -> None:
    """No colour codes, and nothing wrapped however narrow the terminal says it is."""
    done = doctor(tmp_path, {**env, "COLUMNS": "40"})
    assert "\x1b[" not in done.stdout and len(done.stdout.splitlines()) == 10, done.stdout


@pytest.mark.skipif(not Path("/usr/lib/chromium/chromium-headless-shell").exists(),
                    reason="apt-get install chromium-headless-shell")
def test_the_engine_its_binary_and_its_stealth_tells_are_reported(tmp_path: Path, env: dict[str, str]) -> None:
    default = {c["name"]: c for c in json.loads(doctor(tmp_path, env, "--json").stdout)["checks"]}
    assert default["chromium"]["status"] == "ok" and "engine chromium: " in default["chromium"]["detail"]

    done = doctor(tmp_path, {**env, "BROWSERQ_BROWSER": "headless-shell"}, "--json")
    assert done.returncode == 0, done.stdout + done.stderr  # a warning, not a failure
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    engine = checks["chromium"]
    assert engine["status"] == "warn", engine
    assert "engine headless-shell: /usr/lib/chromium/chromium-headless-shell (Chromium 1" in engine["detail"]
    assert "stealth tells: " in engine["detail"] and "HeadlessChrome" in engine["detail"]
    assert "BROWSERQ_BROWSER=chromium" in engine["fix"]
    assert checks["browser launch"]["status"] == "ok"
    assert "headless shell, Chromium 1" in checks["browser launch"]["detail"]

    quiet = doctor(tmp_path, {**env, "BROWSERQ_BROWSER": "headless-shell", "BROWSERQ_STEALTH": "false"}, "--json")
    assert {c["name"]: c for c in json.loads(quiet.stdout)["checks"]}["chromium"]["status"] == "ok"


def test_a_headful_headless_shell_is_refused_before_any_check(tmp_path: Path, env: dict[str, str]) -> None:
    done = browserq(tmp_path, "doctor", **{**env, "BROWSERQ_BROWSER": "headless-shell", "BROWSERQ_HEADLESS": "false"})
    no_traceback(done)
    assert done.returncode != 0 and "headless only" in done.stderr + done.stdout
