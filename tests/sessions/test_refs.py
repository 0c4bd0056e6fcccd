"""Refs from accessibility snapshots, used by commands through the step executor: a ref acts on the
node it was given to, or fails ``REF_STALE`` / ``REF_UNKNOWN`` — never on another element.

Real Chromium against pages served on 127.0.0.1; the server counts which button was pressed."""

from __future__ import annotations

import pytest

from browserq.errors import Codes, StepFailed
from browserq.runner import StepOutcome, StepResult
from browserq.sessions import Snapshot
from tests.sessions.conftest import LiveSession, PressCounter
from tests.support.polling import wait_until


def ref_of(snapshot: Snapshot, role: str, name: str) -> str:
    """The ref the snapshot shows for the one node with this role and name."""
    found = [ref for ref, issued in snapshot.refs.items() if (issued.role, issued.name) == (role, name)]
    assert len(found) == 1, f"{role} {name!r}: {found} in\n{snapshot.text}"
    assert f"[ref={found[0]}]" in snapshot.text
    return found[0]


def failed_with(result: StepResult, code: object) -> str:
    assert result.outcome is StepOutcome.FAILED, result
    assert result.failure is not None and result.failure.code is code, result.failure
    return result.failure.message


def test_a_login_form_is_filled_and_sent_through_refs(session: LiveSession, demo) -> None:
    assert session.do("navigate", url=f"{demo.url}/login").outcome is StepOutcome.SUCCEEDED
    snap = session.snapshot()
    assert snap.url == f"{demo.url}/login" and snap.epoch >= 1
    assert '- heading "Login" [level=1]' in snap.text

    username, password = ref_of(snap, "textbox", "Username"), ref_of(snap, "textbox", "Password")
    assert session.do("fill", ref=username, value="demo").outcome is StepOutcome.SUCCEEDED
    assert session.do("fill", ref=password, value="s3cret-pass").outcome is StepOutcome.SUCCEEDED
    heading = session.do("get", ref=ref_of(snap, "heading", "Login"), what="text", into="heading")
    assert (heading.outcome, heading.output) == (StepOutcome.SUCCEEDED, "Login")
    filled = session.snapshot()
    assert "s3cret-pass" not in filled.text  # a password field's value is never shown
    assert f'- textbox "Password" [active] [ref={password}]: "••••••"' in filled.text
    assert f'- textbox "Username" [ref={username}]: demo' in filled.text
    assert session.do("click", ref=ref_of(snap, "button", "Log in")).outcome is StepOutcome.SUCCEEDED

    welcome = session.do("get", selector="#welcome", what="text", into="welcome")
    assert (welcome.outcome, welcome.output) == (StepOutcome.SUCCEEDED, "Welcome, demo")
    recorded = [(s.action, s.status, s.inputs.get("selector")) for s in session.runtime.store.steps.steps(session.state.request.run_id)]
    assert recorded[1:3] + recorded[4:5] == [("fill", "succeeded", f"ref={username}"), ("fill", "succeeded", f"ref={password}"),
                             ("click", "succeeded", f"ref={ref_of(snap, 'button', 'Log in')}")]


SWAPPING = """<!doctype html><title>Buttons</title>
<script>
function press(name) { fetch('/press/' + name, {method: 'POST'}); }
function rerender(swap) {
  const box = document.getElementById('box');
  const [first, second] = box.querySelectorAll('button');
  const fresh = [first.cloneNode(true), second.cloneNode(true)];   // identical-looking, new nodes
  box.replaceChildren(...(swap ? fresh.reverse() : fresh));
}
</script>
<div id="box"><button onclick="press('alpha')">Alpha</button><button onclick="press('beta')">Beta</button></div>
<button onclick="rerender(true)">Shuffle</button>
<button onclick="rerender(false)">Redraw</button>
"""


@pytest.mark.parametrize("rerender", ["Shuffle", "Redraw"])
def test_a_stale_ref_never_presses_another_button(session: LiveSession, served, presses: PressCounter,
                                                   rerender: str) -> None:
    """Shuffle swaps the two buttons for fresh copies; Redraw replaces them with identical ones in
    place. Either way the old ref of Alpha names a node that left the page: REF_STALE, and the
    server saw no press at all — not Beta's (now where Alpha was), not Alpha's look-alike."""
    base = served({"/": SWAPPING})
    session.do("navigate", url=f"{base}/")
    before = session.snapshot()
    alpha = ref_of(before, "button", "Alpha")
    assert session.do("click", ref=ref_of(before, "button", rerender)).outcome is StepOutcome.SUCCEEDED

    message = failed_with(session.do("click", ref=alpha), Codes.REF_STALE)
    assert f"ref {alpha} is stale" in message and f"epoch {before.epoch}" in message and "snapshot" in message
    assert failed_with(session.do("hover", ref=alpha), Codes.REF_STALE)
    assert (presses["alpha"], presses["beta"]) == (0, 0)

    after = session.snapshot()
    assert after.epoch == before.epoch  # no navigation: the same document, new nodes
    new_alpha = ref_of(after, "button", "Alpha")
    assert new_alpha != alpha
    # the old node was in no later snapshot: its record is gone, the ref stays stale
    assert session.book.issued(alpha) is None
    assert "later snapshot" in failed_with(session.do("click", ref=alpha), Codes.REF_STALE)
    assert session.do("click", ref=new_alpha).outcome is StepOutcome.SUCCEEDED
    wait_until(lambda: presses["alpha"] == 1, 10, "the press of the new Alpha")
    assert presses["beta"] == 0
    # the Shuffle/Redraw button was not re-rendered: its ref still works, and is the same string
    assert ref_of(after, "button", rerender) == ref_of(before, "button", rerender)


ENABLED_LATER = """<!doctype html><title>Later</title>
<button id="send" disabled onclick="fetch('/press/send', {method: 'POST'})">Send</button>
<script>
const swap = () => {                  // an identical Send, enabled, in the same place
  const old = document.getElementById('send');
  const fresh = old.cloneNode(true);
  fresh.disabled = false;
  old.replaceWith(fresh);
};
// The swap's second starts once the test has its snapshot (it serves /armed then): on a timer
// from the page's load, a slow machine took the snapshot after the swap (a ref to the newcomer).
const arm = async () => (await fetch('/armed')).ok ? setTimeout(swap, 1000) : setTimeout(arm, 50);
arm();
</script>"""


def test_a_node_replaced_while_its_click_waits_is_never_clicked(session: LiveSession, served,
                                                                presses: PressCounter) -> None:
    """The click starts while Send is disabled and waits for it; the page then swaps it for an
    identical, enabled Send. Playwright's ref selector matches nothing any more: the click never
    lands on the newcomer and fails REF_STALE. (Should the machine be slow enough that the swap
    comes before the click, the check before dispatch says the same.)"""
    pages = {"/": ENABLED_LATER}
    base = served(pages)
    session.do("navigate", url=f"{base}/")
    send = ref_of(session.snapshot(), "button", "Send")
    pages["/armed"] = "armed"  # the page swaps Send a second from now

    message = failed_with(session.do("click", ref=send, timeout_s=3), Codes.REF_STALE)
    assert "left the page" in message
    assert presses["send"] == 0
    new_send = ref_of(session.snapshot(), "button", "Send")
    assert new_send != send and session.do("click", ref=new_send).outcome is StepOutcome.SUCCEEDED
    wait_until(lambda: presses["send"] == 1, 10, "the press of the new Send")


RERENDERING = SWAPPING.replace("</script>", "setInterval(() => rerender(true), 250);</script>")


def test_refs_on_a_page_that_rerenders_on_a_timer_press_their_own_button_or_fail_stale(
        session: LiveSession, served, presses: PressCounter) -> None:
    """Whatever the timing, a ref's click reaches its own node or fails REF_STALE."""
    base = served({"/": RERENDERING})
    session.do("navigate", url=f"{base}/")
    pressed = 0
    for _ in range(6):
        result = session.do("click", ref=ref_of(session.snapshot(), "button", "Alpha"))
        if result.outcome is StepOutcome.SUCCEEDED:
            pressed += 1
        else:
            failed_with(result, Codes.REF_STALE)
    wait_until(lambda: presses["alpha"] == pressed, 10, f"{pressed} presses of Alpha")
    assert presses["beta"] == 0


def test_a_navigation_makes_every_ref_stale_and_new_refs_are_new_strings(session: LiveSession, demo) -> None:
    session.do("navigate", url=f"{demo.url}/login")
    first = session.snapshot()
    login = ref_of(first, "button", "Log in")

    session.do("navigate", url=f"{demo.url}/login")  # the same URL again: a new document
    message = failed_with(session.do("click", ref=login), Codes.REF_STALE)
    second = session.snapshot()
    assert second.epoch > first.epoch and f"epoch {second.epoch}" in message
    assert not set(first.refs) & set(second.refs)
    # Playwright's own ref counter started again at 1 in the new document: its numbers repeat
    numbers = [{issued.target.rsplit("e", 1)[1] for issued in snap.refs.values()} for snap in (first, second)]
    assert "1" in numbers[0] & numbers[1]

    assert session.do("click", ref=ref_of(second, "link", "Login")).outcome is StepOutcome.SUCCEEDED
    failed_with(session.do("fill", ref=ref_of(second, "textbox", "Username"), value="x"), Codes.REF_STALE)

    third = session.snapshot()  # a same-document navigation (history.pushState) counts too
    session.evaluate("history.pushState({}, '', '/login?step=2')")
    failed_with(session.do("fill", ref=ref_of(third, "textbox", "Username"), value="x"), Codes.REF_STALE)
    assert session.snapshot().epoch == third.epoch + 1


FRAMED = """<!doctype html><title>Framed</title><h1>Outside</h1>
<button onclick="fetch('/press/outside', {method: 'POST'})">Outside</button>
<iframe id="pay" src="/frame"></iframe>"""
FRAME = """<!doctype html><title>Frame</title>
<label>Card <input id="card"></label>
<button onclick="fetch('/press/inside-' + document.getElementById('card').value, {method: 'POST'})">Pay</button>"""


def test_refs_inside_an_iframe_act_in_the_frame_and_go_stale_when_it_navigates(
        session: LiveSession, served, presses: PressCounter) -> None:
    base = served({"/": FRAMED, "/frame": FRAME, "/other": FRAME.replace("Pay", "Other")})
    session.do("navigate", url=f"{base}/")
    session.do("wait", selector="iframe#pay >>> #card", state="visible")
    snap = session.snapshot()
    frame_lines = snap.text[snap.text.index("- iframe"):]
    assert '- button "Pay"' in frame_lines and '- textbox "Card"' in frame_lines  # under the frame node

    assert session.do("fill", ref=ref_of(snap, "textbox", "Card"), value="4242").outcome is StepOutcome.SUCCEEDED
    assert session.do("click", ref=ref_of(snap, "button", "Pay")).outcome is StepOutcome.SUCCEEDED
    wait_until(lambda: presses["inside-4242"] == 1, 10, "the press inside the frame")

    session.evaluate("document.getElementById('pay').src = '/other'")
    session.do("wait", selector="iframe#pay >>> text=Other", state="visible")
    message = failed_with(session.do("click", ref=ref_of(snap, "button", "Pay")), Codes.REF_STALE)
    assert "frame navigated" in message
    # the main frame did not navigate: its refs still work
    assert session.do("click", ref=ref_of(snap, "button", "Outside")).outcome is StepOutcome.SUCCEEDED
    wait_until(lambda: presses["outside"] == 1, 10, "the press outside the frame")
    assert presses["inside-4242"] == 1


def test_the_budget_cuts_at_a_line_with_a_marker_and_interactive_keeps_what_acts(
        session: LiveSession, served) -> None:
    rows = "".join(f"<li><p>Row {i} says something</p><button>Buy {i}</button></li>" for i in range(400))
    base = served({"/": f"<!doctype html><title>Long</title><h1>Shop</h1><ul>{rows}</ul>"})
    session.do("navigate", url=f"{base}/")

    whole = session.snapshot()
    assert not whole.truncated and len(whole.text) < 100_000 and "Buy 399" in whole.text

    cut = session.snapshot(budget=2_000)
    assert cut.truncated and len(cut.text) <= 2_000
    assert cut.text.splitlines()[-1].startswith("# [snapshot cut: its 2000-character budget is spent;")
    assert "Buy 399" not in cut.text
    assert all(f"[ref={ref}]" in cut.text for ref in cut.refs)

    interactive = session.snapshot(interactive=True)
    assert '- heading "Shop"' in interactive.text and '- button "Buy 399"' in interactive.text
    assert "Row 3 says" not in interactive.text and "paragraph" not in interactive.text
    assert len(interactive.text) < len(whole.text)
    buy = ref_of(interactive, "button", "Buy 7")
    assert buy == ref_of(whole, "button", "Buy 7")  # one node, one ref, whichever view showed it
    assert session.do("click", ref=buy).outcome is StepOutcome.SUCCEEDED


def test_a_ref_never_issued_is_ref_unknown_and_the_session_goes_on(session: LiveSession, demo) -> None:
    session.do("navigate", url=f"{demo.url}/login")
    snap = session.snapshot()
    assert "never issued" in failed_with(session.do("click", ref=f"e{snap.epoch}.9999"), Codes.REF_UNKNOWN)
    failed_with(session.do("click", ref=f"e{snap.epoch + 5}.1"), Codes.REF_UNKNOWN)
    failed_with(session.do("click", ref="e12"), Codes.REF_UNKNOWN)  # Playwright's own ref: not ours
    with pytest.raises(StepFailed) as raised:
        session.do("click", ref="${secret}")
    assert raised.value.code is Codes.REF_UNKNOWN
    with pytest.raises(StepFailed) as raised:
        session.do("click", selector="aria-ref=e3")
    assert raised.value.code is Codes.INVALID_STEP_INPUT and "ref=" in raised.value.message

    assert session.do("click", ref=ref_of(snap, "button", "Log in")).outcome is StepOutcome.SUCCEEDED


def test_a_ref_outside_a_session_is_refused(session: LiveSession, demo) -> None:
    """A step naming a ref on a context without a session's refs fails; it never acts."""
    session.do("navigate", url=f"{demo.url}/login")
    ref = ref_of(session.snapshot(), "button", "Log in")
    session.state.browser.refs = None
    failed_with(session.do("click", ref=ref), Codes.INVALID_STEP_INPUT)
    session.state.browser.refs = session.book
    assert session.do("click", ref=ref).outcome is StepOutcome.SUCCEEDED


TABS = """<!doctype html><title>Tabs</title><a href="/other" target="_blank">Open</a>
<button onclick="fetch('/press/first', {method: 'POST'})">First</button>"""


def test_another_tab_starts_a_new_epoch(session: LiveSession, served, presses: PressCounter) -> None:
    """Refs belong to the page they were issued on: once another tab is the session's page, the
    old refs are stale (also after switching back), and the new page's refs are new strings."""
    base = served({"/": TABS, "/other": "<!doctype html><title>Other</title><button>Second</button>"})
    session.do("navigate", url=f"{base}/")
    first = session.snapshot()
    assert session.do("click", ref=ref_of(first, "link", "Open"), opens="tab").outcome is StepOutcome.SUCCEEDED
    assert session.page.url == f"{base}/other"

    assert "another tab" in failed_with(session.do("click", ref=ref_of(first, "button", "First")), Codes.REF_STALE)
    second = session.snapshot()
    assert second.epoch > first.epoch and not set(first.refs) & set(second.refs)
    assert session.do("switch_tab", to=0).outcome is StepOutcome.SUCCEEDED
    failed_with(session.do("click", ref=ref_of(first, "button", "First")), Codes.REF_STALE)
    failed_with(session.do("click", ref=ref_of(second, "button", "Second")), Codes.REF_STALE)
    assert presses["first"] == 0
    assert session.do("click", ref=ref_of(session.snapshot(), "button", "First")).outcome is StepOutcome.SUCCEEDED
    wait_until(lambda: presses["first"] == 1, 10, "the press of First")


def test_a_snapshot_of_a_closed_page_fails_like_a_step(session: LiveSession, demo) -> None:
    session.do("navigate", url=f"{demo.url}/login")
    page = session.page
    session.run(page.close())
    with pytest.raises(StepFailed) as failed:
        session.run(session.snapshots.take(page))
    assert failed.value.code is Codes.PAGE_CRASHED, failed.value
