"""The settings object: every setting documented, parsed by the limits' own parsers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from browserq.errors import ConfigError
from browserq.settings import load_settings
from tests.conftest import REPO


def test_readme_lists_every_setting() -> None:
    from browserq.settings import Settings

    readme = (REPO / "docs" / "settings.md").read_text()
    missing = [name for name in Settings.model_fields if f"`BROWSERQ_{name.upper()}`" not in readme]
    assert not missing, f"docs/settings.md's table lacks {missing}"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No BROWSERQ_* variable of the test run leaks into the settings under test."""
    for name in list(os.environ):
        if name.startswith("BROWSERQ_"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_a_settings_file_fills_in_below_the_environment(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    toml = tmp_path / "settings.toml"
    toml.write_text('queue = "from-file"\nstep_retries = 5\nrate_limits = {"Example.com" = "120/min"}\n')
    clean_env.setenv("BROWSERQ_SETTINGS_FILE", str(toml))
    clean_env.setenv("BROWSERQ_STEP_RETRIES", "1")
    settings = load_settings()
    assert (settings.queue, settings.step_retries) == ("from-file", 1)  # the environment wins
    assert settings.rate_limits == {"example.com": "2/s"}  # parsed by limits.specs
    yaml_file = tmp_path / "settings.yaml"
    yaml_file.write_text("tenant_caps: 'acme=2; *=5'\n")
    clean_env.setenv("BROWSERQ_SETTINGS_FILE", str(yaml_file))
    assert load_settings().tenant_caps == {"acme": 2, "*": 5}


def test_a_settings_file_with_an_unknown_key_is_refused(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text("databse_url: sqlite:///x.db\n")
    clean_env.setenv("BROWSERQ_SETTINGS_FILE", str(path))
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) databse_url; known settings: .*database_url"):
        load_settings()
    clean_env.setenv("BROWSERQ_SETTINGS_FILE", str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="which is not a file"):
        load_settings()


def test_every_problem_names_its_variable(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("BROWSERQ_STEP_RETRIES", "lots")
    clean_env.setenv("BROWSERQ_TENANT_CAPS", "acme=-1")
    with pytest.raises(ConfigError) as caught:
        load_settings(broker_url=" ")
    message = str(caught.value)
    assert message.startswith("invalid settings: ")
    for variable in ("BROWSERQ_STEP_RETRIES", "BROWSERQ_TENANT_CAPS", "BROWSERQ_BROKER_URL"):
        assert variable in message, message


def test_derived_values(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    settings = load_settings(database_url="sqlite:///x.db", no_sandbox=True, chromium_args=["--foo", "--no-sandbox"])
    assert settings.effective_result_backend == "db+sqlite:///x.db"
    assert not settings.chromium_sandbox
    args = settings.chromium_launch_args()
    assert args.count("--no-sandbox") == 1 and args[-1] == "--foo"
    assert load_settings(no_sandbox=False).chromium_sandbox
    with pytest.raises(ConfigError, match="BROWSERQ_CHROMIUM_PATH"):
        load_settings(chromium_path=str(tmp_path / "no-chromium")).resolve_chromium()


def test_database_timeouts_have_sane_defaults(clean_env: pytest.MonkeyPatch) -> None:
    from browserq.store.engine import DbTimeouts

    settings = load_settings()
    limits = (settings.db_statement_timeout_s, settings.db_lock_timeout_s, settings.db_idle_in_transaction_timeout_s)
    assert limits == (10.0, 5.0, 30.0)
    timeouts = DbTimeouts.from_settings(settings)
    assert timeouts.answer_s == 15.0  # + 5 s, below two thirds of the default lease (30 s)
    assert timeouts.answer_s < settings.lease_ttl_s * 2 / 3
    assert timeouts.pg_options() == (
        "-c statement_timeout=10000 -c lock_timeout=5000 -c idle_in_transaction_session_timeout=30000"
    )
    clean_env.setenv("BROWSERQ_DB_STATEMENT_TIMEOUT_S", "0")
    assert DbTimeouts.from_settings(load_settings()).answer_s is None  # 0: no limit, no drop
