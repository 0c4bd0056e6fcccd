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
    steps = session.runtime.store.steps.steps(session.state.request.run_id)
    print("capture ms:", [e["ms"] for s in steps for e in s.events or [] if e.get("type") == "locator"])
    assert locator_events(session) == [
        ("fill", "succeeded", {"role": "textbox", "name": "Username"}, "role"),
        ("fill", "succeeded", {"role": "textbox", "name": "Password"}, "role"),
        ("click", "succeeded", {"role": "button", "name": "Log in"}, "role"),
    ]


ROWS = """<!doctype html><title>Rows</title>
<div id="row-1"><span>Ada</span> <button onclick="this.textContent='Deleted'">Delete</button></div>
<div id="row-2"><span>Bob</span> <button onclick="this.textContent='Deleted'">Delete</button></div>
<iframe id="pay" src="/frame" title="Payment"></iframe>
"""
FRAME = "<!doctype html><button>Pay</button>"


def test_twins_get_a_scoped_locator_a_frame_none_and_the_page_is_never_marked(session: LiveSession, served) -> None:
    base = served({"/": ROWS, "/frame": FRAME})
    session.do("navigate", url=f"{base}/")
    snap = session.snapshot()
    deletes = [ref for ref, issued in snap.refs.items() if (issued.role, issued.name) == ("button", "Delete")]
    assert len(deletes) == 2
    assert session.do("click", ref=deletes[1]).outcome is StepOutcome.SUCCEEDED
    # captured before the click renamed the button: the locator names it as the snapshot showed it
    assert session.evaluate("document.querySelector('#row-2 button').textContent") == "Deleted"
    assert session.do("click", ref=ref_of(snap, "button", "Pay")).outcome is StepOutcome.SUCCEEDED
    assert session.evaluate("document.querySelectorAll('[data-browserq-locate]').length") == 0
    session.run(session.state.journal.flush())
    events = [e for s in session.runtime.store.steps.steps(session.state.request.run_id) for e in s.events or []
              if e.get("type") == "locator"]
    assert [(e["selector"], e["by"]) for e in events] == [
        ({"role": "button", "name": "Delete", "exact": True, "within": "#row-2"}, "role within"),
        (None, "none"),
    ]
    assert events[1]["why"] == "inside an iframe" and all(e["ref"] for e in events)
    print("capture ms:", [e["ms"] for e in events])
