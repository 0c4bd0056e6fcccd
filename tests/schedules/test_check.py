"""The entries against their templates: what ``browserq beat`` refuses before it starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from browserq.schedules import check_schedules
from browserq.secrets import SecretBox
from browserq.templates import TemplateRegistry
from tests.conftest import TEST_SECRET_KEY, make_settings
from tests.schedules.conftest import write_schedules


def check(tmp_path: Path, templates_dir: Path, body: str, key: str | None = TEST_SECRET_KEY):
    settings = make_settings(tmp_path, templates_dir=templates_dir)
    registry = TemplateRegistry.from_settings(settings)
    return check_schedules(write_schedules(tmp_path, body), registry, SecretBox(key),
                           reserved={"browserq-sweep"})


def lines(checked) -> list[str]:
    return [str(p).split(": ", 1)[1] for p in checked.problems]  # without the file's path


def test_entries_that_fit_their_templates_are_ready(tmp_path: Path, templates_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHED_TEST_PW", "pw-from-env")
    (tmp_path / "url").write_text("http://127.0.0.1:1/\n")
    checked = check(tmp_path, templates_dir, """
        schedules:
          - {name: a, template: login@1, params: {base_url: {file: URL}, password: {env: SCHED_TEST_PW}}, every: 1h}
          - {name: b, template: ping, params: {url: "http://127.0.0.1/"}, cron: "0 * * * *"}
          - {name: c, template: nosuch, every: 1h, enabled: false}
    """.replace("URL", str(tmp_path / "url")))
    assert checked.ok, lines(checked)
    assert [s.name for s in checked.ready] == ["a", "b"] and [s.name for s in checked.disabled] == ["c"]


def test_every_problem_of_every_entry_is_one_line_naming_it(tmp_path: Path, templates_dir: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCHED_TEST_MISSING", raising=False)
    checked = check(tmp_path, templates_dir, f"""
        schedules:
          - {{name: unknown, template: nosuch@2, every: 1h}}
          - {{name: inline, template: login, params: {{base_url: "http://127.0.0.1/", password: hunter22}}, every: 1h}}
          - {{name: unset, template: login, params: {{base_url: "http://127.0.0.1/", password: {{env: SCHED_TEST_MISSING}}}}, every: 1h}}
          - {{name: nofile, template: login, params: {{base_url: "http://127.0.0.1/", password: {{file: {tmp_path}/none}}}}, every: 1h}}
          - {{name: params, template: login, params: {{pages: 9, colour: red, password: {{env: HOME}}}}, every: 1h}}
          - {{name: browserq-sweep, template: ping, params: {{url: "http://127.0.0.1/"}}, every: 1h}}
    """)
    assert lines(checked) == [
        "line 2: schedule 'unknown': no template named 'nosuch'; available: login, ping",
        "line 3: schedule 'inline': param 'password' is secret in template login@1.0.0: give it by reference, "
        "{env: VAR} or {file: /path}, never inline",
        "line 4: schedule 'unset': param 'password': environment variable SCHED_TEST_MISSING is not set",
        f"line 5: schedule 'nofile': param 'password': file {tmp_path}/none does not exist",
        "line 6: schedule 'params': template login@1.0.0: unknown param 'colour'; accepted params: base_url, pages, password",
        "line 6: schedule 'params': template login@1.0.0: param 'base_url': missing required param (url)",
        "line 6: schedule 'params': template login@1.0.0: param 'pages': 9 is above the maximum 5",
        "line 7: schedule 'browserq-sweep': the name is taken by the app's own beat entry 'browserq-sweep'; pick another",
    ]
    assert "hunter22" not in "\n".join(lines(checked))
    assert checked.ready == []


def test_a_secret_param_needs_the_secret_key(tmp_path: Path, templates_dir: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHED_TEST_PW", "pw")
    checked = check(tmp_path, templates_dir, """
        schedules:
          - {name: a, template: login, params: {base_url: "http://127.0.0.1/", password: {env: SCHED_TEST_PW}}, every: 1h}
    """, key=None)
    assert lines(checked) == [
        "line 2: schedule 'a': template login@1.0.0 takes secret params but BROWSERQ_SECRET_KEY is not set; "
        "generate one with `browserq keygen` and set BROWSERQ_SECRET_KEY on producers and workers"]


def test_an_empty_reference_is_refused(tmp_path: Path, templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHED_TEST_EMPTY", "")
    (tmp_path / "blank").write_text("\n")
    checked = check(tmp_path, templates_dir, f"""
        schedules:
          - {{name: a, template: login, params: {{base_url: {{file: {tmp_path}/blank}}, password: {{env: SCHED_TEST_EMPTY}}}}, every: 1h}}
    """)
    assert lines(checked) == [
        f"line 2: schedule 'a': param 'base_url': file {tmp_path}/blank is empty",
        "line 2: schedule 'a': param 'password': environment variable SCHED_TEST_EMPTY is empty",
    ]
