"""A ref command notes the most robust locator of its node on its step attempt's record, before
its action runs: what freezing a session writes in place of the ref.

Real Chromium against pages served on 127.0.0.1, commands through the step executor."""

from __future__ import annotations

from typing import Any

from browserq.runner import StepOutcome
from tests.sessions.conftest import LiveSession
from tests.sessions.test_refs import ref_of


def locator_events(session: LiveSession) -> list[tuple[str, str, Any, str]]:
    """``(action, status, selector, by)`` of every recorded locator event, in order."""
    steps = session.runtime.store.steps.steps(session.state.request.run_id)
    return [(s.action, s.status, e.get("selector"), e.get("by")) for s in steps for e in s.events or []
            if e.get("type") == "locator"]


def test_login_refs_note_role_and_name(session: LiveSession, demo) -> None:
    session.do("navigate", url=f"{demo.url}/login")
    snap = session.snapshot()
    for role, name, action, fields in (("textbox", "Username", "fill", {"value": "demo"}),
                                       ("textbox", "Password", "fill", {"value": "s3cret-pass"}),
                                       ("button", "Log in", "click", {})):
        assert session.do(action, ref=ref_of(snap, role, name), **fields).outcome is StepOutcome.SUCCEEDED
    session.run(session.state.journal.flush())
    print(locator_events(session))
    assert locator_events(session) == [
        ("fill", "succeeded", {"role": "textbox", "name": "Username"}, "role"),
        ("fill", "succeeded", {"role": "textbox", "name": "Password"}, "role"),
        ("click", "succeeded", {"role": "button", "name": "Log in"}, "role"),
    ]
