"""Freezing a session that worked into a versioned template, replayed by ``run_template.delay``
with no agent: real worker (Redis), scratch PostgreSQL, Chromium on the demo site."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from browserq.demo.site import DEMO_PASSWORD
from tests.sessions.session_fixtures import Fleet, redis_fleet_fixture  # noqa: F401  # fixtures

pytestmark = pytest.mark.slow

QUICK = {"step_timeout_s": 10, "trace": "off"}  # a ref's capture may take a third of it (under load)
_LINE = re.compile(r'- (?P<role>[a-z]+) "(?P<name>(?:[^"\\]|\\.)*)"[^\n]*\[ref=(?P<ref>e\d+\.\d+)\]')


def refs(text: str) -> dict[tuple[str, str], str]:
    """``(role, name) → ref`` of a snapshot's text."""
    return {(m["role"], m["name"]): m["ref"] for m in _LINE.finditer(text)}


def drive(s: Any, url: str) -> dict[int, Any]:
    """Log in and send the contact form through refs, read values; ``{command index: output}``
    of what the agent read. Command 3 fails, command 6 is a screenshot."""
    from browserq import CommandFailed

    read: dict[int, Any] = {}
    s.navigate(url=f"{url}/login")                                           # 0
    login = refs(s.snapshot(interactive=True).text)
    s.fill(ref=login["textbox", "Username"], value="demo")                   # 1
    s.fill(ref=login["textbox", "Password"], value="${password}")            # 2
    with pytest.raises(CommandFailed) as missing:
        s.click(selector="#no-such-button", timeout_s=1)                     # 3: fails
    read[3] = missing.value.code
    assert missing.value.code in ("SELECTOR_NOT_FOUND", "TIMEOUT")
    s.click(ref=login["button", "Log in"])                                   # 4
    read[5] = s.get(selector="#welcome", what="text")                        # 5
    s.do("screenshot", name="account.png")                                   # 6
    form = refs(s.snapshot(interactive=True).text)
    s.fill(ref=form["textbox", "Name"], value="Ada")                         # 7
    s.do("select", ref=form["combobox", "Topic"], value="sales")             # 8
    s.fill(ref=form["textbox", "Message"], value="sent by a frozen session")  # 9
    s.click(ref=form["button", "Send"])                                      # 10
    sent = refs(s.snapshot().text)
    read[11] = s.get(ref=sent["heading", "Message sent"], what="text")       # 11
    s.navigate(url=f"{url}/quotes/")                                         # 12
    read[13] = s.do("extract", selector=".quote", fields={"text": ".text", "author": ".author"},
                    limit=3)                                                 # 13
    return read


def test_a_session_frozen_into_a_template_replays_with_the_same_outputs(
        redis_fleet: Fleet, demo, tmp_path: Path) -> None:
    from browserq import Secret, open_session, run_template
    from browserq.sessions.errors import FreezeRefused
    from browserq.settings import get_settings
    from browserq.templates.errors import TemplateTaken

    params = {"user": "demo", "password": Secret(DEMO_PASSWORD), "name": "Ada"}
    with open_session(settings=QUICK, allowed_domains=["127.0.0.1"], secrets={"password": DEMO_PASSWORD}) as s:
        read = drive(s, demo.url)
        missing_code = read.pop(3)
        assert read[5] == "Welcome, demo" and read[11] == "Message sent" and len(read[13]) == 3
        saved = s.save_template("login_flow", "1.0.0", params=params)
        with pytest.raises(FreezeRefused, match="'password'"):  # the session's secret, not named: refused
            s.save_template("login_flow", "1.0.1", params={"user": "demo"})
    templates_dir = Path(get_settings().templates_dir)
    print(saved.text)

    # the file: locators, not refs; ${user}, ${name}, ${password}; no secret anywhere
    assert saved.ref == "login_flow@1.0.0" and saved.path == templates_dir / "login_flow@1.0.0.yaml"
    assert saved.path.read_text(encoding="utf-8") == saved.text
    assert DEMO_PASSWORD not in saved.text and "ref=" not in saved.text and "[secret:" not in saved.text
    body = yaml.safe_load(saved.text)
    assert body["params"]["password"] == {"type": "secret", "required": True}
    steps = body["steps"]
    assert steps[1] == {"action": "fill", "selector": {"role": "textbox", "name": "Username"}, "value": "${user}"}
    assert steps[2] == {"action": "fill", "selector": {"role": "textbox", "name": "Password"}, "value": "${password}"}
    assert steps[3] == {"action": "click", "selector": {"role": "button", "name": "Log in"}}
    assert {"action": "fill", "selector": {"role": "textbox", "name": "Name"}, "value": "${name}"} in steps
    assert dict(saved.left_out) == {3: f"it failed ({missing_code})",
                                    6: "a screenshot (evidence of the session, not a step of the task)"}
    assert [s["action"] for s in steps] == ["navigate", "fill", "fill", "click", "get", "fill", "select", "fill",
                                            "click", "get", "navigate", "extract"]
    assert saved.outputs == {"get_5": 5, "get_11": 11, "extract_13": 13}

    # replayed by the queue, no agent: the same outputs
    submitted = len(demo.submissions)
    result = run_template.delay("login_flow@1.0.0", params={"password": DEMO_PASSWORD}).get(timeout=240)
    assert result["status"] == "completed", result
    assert result["outputs"] == {name: read[index] for name, index in saved.outputs.items()}
    assert len(demo.submissions) == submitted + 1
    assert demo.submissions[-1]["name"] == "Ada" and demo.submissions[-1]["topic"] == "sales"

    # a taken name@version: the same body again is no change, another body is refused
    with open_session(settings=QUICK, allowed_domains=["127.0.0.1"], secrets={"password": DEMO_PASSWORD}) as again:
        drive(again, demo.url)
        with pytest.raises(TemplateTaken, match=r"login_flow@1\.0\.0 is taken"):
            again.save_template("login_flow", "1.0.0", params={"user": "demo", "password": Secret(DEMO_PASSWORD)})
    assert saved.path.read_text(encoding="utf-8") == saved.text
    assert sorted(p.name for p in templates_dir.glob("login_flow*")) == ["login_flow@1.0.0.yaml"]


def test_bad_names_versions_and_params_are_refused_before_anything_is_read(redis_fleet: Fleet, demo) -> None:
    from browserq import TemplateInvalid, open_session
    from browserq.sessions.errors import FreezeRefused
    from browserq.settings import get_settings

    with open_session(settings=QUICK) as s:
        s.navigate(url=f"{demo.url}/quotes/")
        for name, version, why in (("login_flow", "1.0", "MAJOR.MINOR.PATCH"), ("login_flow", "v1.0.0", "MAJOR"),
                                   ("Login Flow", "1.0.0", "lowercase"), ("session", "1.0.0", "sessions' own")):
            with pytest.raises(TemplateInvalid, match=why):
                s.save_template(name, version)
        with pytest.raises(FreezeRefused, match="list values are not frozen"):
            s.save_template("quotes_once", "1.0.0", params={"pages": [1, 2]})
        with pytest.raises(FreezeRefused, match="param name 'outputs'"):
            s.save_template("quotes_once", "1.0.0", params={"outputs": "x"})
    assert not list(Path(get_settings().templates_dir).glob("quotes_once*"))
