"""Browser dialogs: answered by the template's policy or the step's ``dialog:``, and recorded.

Real Chromium against a page served on 127.0.0.1 that writes what its ``confirm()`` and
``prompt()`` returned into the DOM; the step records (PostgreSQL and SQLite) and ``browserq show``
(plain and terminal) say which dialog appeared and how it was answered; a secret prompt text is
masked everywhere it is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from rich.console import Console

from browserq.cli import render
from browserq.errors import BrowserqError
from browserq.execute.runtime import Runtime
from tests.conftest import REPO, template
from tests.support.cli_zygote import browserq_command
from tests.support.http import html_pages, serve_http
from tests.support.workers import browserq_env

PAGE = (
    '<html><head><link rel="icon" href="data:,"></head><body>'
    '<button id="confirm" onclick="document.getElementById(\'c\').textContent = '
    "confirm('Delete it?') ? 'yes' : 'no'\">confirm</button>"
    '<button id="prompt" onclick="const v = prompt(\'Your name?\', \'default\');'
    " document.getElementById('p').textContent = v === null ? 'null' : v\">prompt</button>"
    '<button id="alert" onclick="alert(\'Saved\'); document.getElementById(\'a\').textContent = \'after\'">alert</button>'
    '<div id="c">-</div><div id="p">-</div><div id="a">-</div></body></html>'
)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_http(html_pages({"/dialogs": PAGE})) as host:
        yield f"http://{host}/dialogs"


def _dialogs(runtime: Runtime, run_id: str) -> dict[str, list[dict[str, Any]]]:
    """Each step id's recorded dialog events, without their timestamps."""
    found = {}
    for s in runtime.store.steps.steps(run_id):
        if s.step_id:
            found[s.step_id] = [{k: v for k, v in e.items() if k != "t"} for e in s.events or []]
    return found


ANSWERED = """
params:
  password: {type: secret, required: true}
settings: {trace: off}
steps:
  - {action: navigate, url: "%s"}
  - {id: confirm, action: click, selector: "#confirm", dialog: accept}
  - {id: prompt, action: click, selector: "#prompt", dialog: {accept: true, prompt: "Ada"}}
  - {id: c, action: get, selector: "#c", into: c}
  - {id: p, action: get, selector: "#p", into: p}
  - {id: secret, action: click, selector: "#prompt", dialog: {accept: true, prompt: "${password}"}}
  - {action: assert, text: "${password}"}
"""


def test_a_confirm_accepted_and_a_prompt_answered_are_recorded_and_shown(
    any_runtime: Runtime, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = any_runtime.run_loaded(template(ANSWERED % site), {"password": "hunter2-secret"})
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert outcome.outputs == {"c": "yes", "p": "Ada"}  # what the page's confirm()/prompt() returned
    events = _dialogs(any_runtime, outcome.run_id)
    assert events["confirm"] == [
        {"type": "dialog", "dialog": "confirm", "message": "Delete it?", "answer": "accepted"}
    ]
    assert events["prompt"] == [
        {"type": "dialog", "dialog": "prompt", "message": "Your name?", "answer": "accepted", "prompt": "Ada"}
    ]
    [secret] = events["secret"]
    assert secret["answer"] == "accepted" and secret["prompt"] != "hunter2-secret"
    assert "hunter2-secret" not in json.dumps([s.events for s in any_runtime.store.steps.steps(outcome.run_id)])
    assert "hunter2-secret" not in json.dumps([s.inputs for s in any_runtime.store.steps.steps(outcome.run_id)])
    assert events["c"] == [] and events["p"] == []

    # browserq show, as a script reads it (stdout is a pipe: the plain form)
    env = browserq_env()
    env.update({"BROWSERQ_DATABASE_URL": any_runtime.settings.database_url,
                "BROWSERQ_ARTIFACTS_DIR": str(any_runtime.settings.artifacts_dir), "PYTHONPATH": str(REPO)})
    shown = browserq_command(["show", outcome.run_id], env=env, timeout=120)
    assert shown.returncode == 0, shown.stderr
    section = shown.stdout.split("\nEvents\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert section[0] == "step\ttry\tevent"
    assert "1\t1\tconfirm 'Delete it?' → accepted" in section
    assert "2\t1\tprompt 'Your name?' → accepted (prompt: 'Ada')" in section
    assert "hunter2-secret" not in shown.stdout

    # ... and on a terminal (the Rich tables)
    store = any_runtime.store
    monkeypatch.setattr(render, "console", Console(markup=False, width=400))
    with render.console.capture() as captured:
        render.show_run(store, store.runs.get_run(outcome.run_id), store.steps.steps(outcome.run_id), [])
    text = captured.get()
    assert "💬 confirm 'Delete it?' → accepted" in text
    assert "💬 prompt 'Your name?' → accepted (prompt: 'Ada')" in text
    assert "hunter2-secret" not in text


DEFAULTS = """
settings: {trace: off%s}
steps:
  - {action: navigate, url: "%s"}
  - {id: confirm, action: click, selector: "#confirm"}
  - {id: prompt, action: click, selector: "#prompt"}
  - {id: alert, action: click, selector: "#alert"}
  - {id: override, action: click, selector: "#confirm", dialog: %s}
  - {id: c, action: get, selector: "#c", into: c}
  - {id: p, action: get, selector: "#p", into: p}
  - {id: a, action: get, selector: "#a", into: a}
"""


def test_the_default_policy_still_dismisses_and_says_so(sqlite_runtime: Runtime, site: str) -> None:
    outcome = sqlite_runtime.run_loaded(template(DEFAULTS % ("", site, "dismiss")))
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert outcome.outputs == {"c": "no", "p": "null", "a": "after"}
    events = _dialogs(sqlite_runtime, outcome.run_id)
    assert [e["answer"] for e in events["confirm"]] == ["dismissed"]
    assert events["prompt"] == [
        {"type": "dialog", "dialog": "prompt", "message": "Your name?", "answer": "dismissed"}
    ]
    assert events["alert"] == [{"type": "dialog", "dialog": "alert", "message": "Saved", "answer": "dismissed"}]


def test_settings_dialogs_accept_and_a_step_that_dismisses(sqlite_runtime: Runtime, site: str) -> None:
    outcome = sqlite_runtime.run_loaded(template(DEFAULTS % (", dialogs: accept", site, "dismiss")))
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    # prompt accepted without a text: the page gets the prompt's default value
    assert outcome.outputs == {"c": "no", "p": "default", "a": "after"}  # c: the override's dismiss, last
    events = _dialogs(sqlite_runtime, outcome.run_id)
    assert [e["answer"] for e in events["confirm"]] == ["accepted"]
    assert [e["answer"] for e in events["override"]] == ["dismissed"]
    assert events["prompt"][0]["answer"] == "accepted" and events["prompt"][0]["prompt"] == "default"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("settings: {dialogs: maybe}\nsteps:\n  - {action: get, what: url, into: u}\n",
         "settings.dialogs: invalid value 'maybe'; valid values: dismiss, accept"),
        ("steps:\n  - {action: click, selector: a, dialog: sometimes}\n",
         "steps[0].dialog: dialog must be accept, dismiss or"),
        ("steps:\n  - {action: click, selector: a, dialog: {accept: false, prompt: x}}\n",
         "it needs accept: true"),
        ("steps:\n  - {action: click, selector: a, dialog: {}}\n", "steps[0].dialog: missing required field 'accept'"),
        ("steps:\n  - {action: click, selector: a, dialog: {accept: true, answer: x}}\n", "answer"),
    ],
)
def test_bad_dialog_fields_are_refused_at_load(body: str, problem: str) -> None:
    with pytest.raises(BrowserqError) as caught:
        template(body)
    assert problem in str(caught.value)
