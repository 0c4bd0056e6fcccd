"""A session hands its page to a person: against a real prefork worker (Redis broker, PostgreSQL)
and real Chromium. The agent's ``s.handoff(...)`` puts the session's run in ``waiting_for_human``;
``browserq live SESSION_ID`` gives a link to the live view WITH input; a "person" (this test, over
the view's HTTP/WebSocket API as tests/live/ do) clicks a field, types and presses Continue; the
agent's command returns what the person did and the next snapshot shows what they typed. Another
command sent meanwhile is refused ``SESSION_WAITING_FOR_HUMAN`` (retryable), nothing run; a wait
nobody finishes fails ``HUMAN_TIMEOUT`` and the session goes on."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from tests.conftest import REPO
from tests.sessions.session_fixtures import Fleet, session_fleet
from tests.support.cli_zygote import browserq_command
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow

QUICK = {"step_timeout_s": 5, "trace": "off", "allow_eval": True}
WAIT = 60


@pytest.fixture(name="fleet", scope="module")
def fleet_fixture(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[Fleet]:
    with session_fleet(tmp_path_factory.mktemp("sessions-handoff"), pg_url, "redis") as fleet:
        yield fleet


def _store() -> Any:
    from browserq.submit.services import producer_services

    return producer_services().store


def _live_link(fleet: Fleet, session_id: str) -> str:
    done = browserq_command(["live", session_id], env=fleet.config.env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


async def _person(link: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Open the view, send ``messages`` then Continue; the errors the view sent back."""
    errors: list[dict[str, Any]] = []
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(link) as page:
            assert page.status == 200
            assert "View only" not in await page.text()
        async with http.ws_connect(link.split("?", 1)[0] + "/ws") as ws:
            for message in [*messages, {"type": "continue"}]:
                await ws.send_json(message)
            while (reply := await ws.receive_json(timeout=WAIT))["type"] != "ended":
                if reply["type"] == "error":
                    errors.append(reply)
    return errors


def other_client(session_id: str) -> Any:
    """A second client of the session (its own reply queue), as another agent's would be."""
    from browserq.settings import get_settings
    from browserq.submit.services import producer_services
    from browserq.submit.session_link import SessionLink
    from browserq.submit.sessions import Session

    return Session(session_id, SessionLink(get_settings().broker_url), producer_services(), get_settings(), 5)


def _in_thread(call: Any) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # the test asserts on it
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def test_an_agent_hands_its_page_to_a_person_and_goes_on_with_what_they_typed(fleet: Fleet, demo) -> None:
    from browserq import CommandFailed, open_session

    with open_session(settings=QUICK) as s:
        s.navigate(url=f"{demo.url}/login")
        box = s.do("eval", expression="(() => { const r = document.querySelector('#username')"
                   ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        thread, answer = _in_thread(lambda: s.handoff("Type your user name, then press Continue", timeout_s=120))
        store = _store()
        wait_until(lambda: store.runs.get_run(s.id).status == "waiting_for_human", WAIT, "the session to wait")
        # Another client's command meanwhile: refused at once, retryable, nothing run.
        other = other_client(s.id)
        try:
            with pytest.raises(CommandFailed) as refused:
                other.click(selector="button[type=submit]")
        finally:
            other._link.close()
        assert refused.value.code == "SESSION_WAITING_FOR_HUMAN" and refused.value.retryable
        link = _live_link(fleet, s.id)
        typed = [{"type": "click", "x": box[0], "y": box[1]}, *({"type": "text", "text": c} for c in "ada")]
        errors = asyncio.run(_person(link, typed))
        thread.join(WAIT)
        assert errors == []
        [output] = answer
        assert not isinstance(output, BaseException), output
        assert output["outcome"] == "continued" and output["inputs"] == 4 and output["waited_s"] >= 0
        assert store.runs.get_run(s.id).status == "running"
        snap = s.snapshot()
        assert 'textbox "Username"' in snap.text and ": ada" in snap.text, snap.text
        session_id = s.id
    [wait] = [h for h in store.handoffs.handoffs(session_id) if h.kind != "watch"]
    assert (wait.outcome, wait.inputs, wait.step_path) == ("continued", 4, "2")
    statuses = [t.to_status for t in store.transitions.transitions(session_id)]
    assert statuses[-3:] == ["waiting_for_human", "running", "completed"], statuses
    inputs = [st.inputs for st in store.steps.steps(session_id) if st.step_path == "2~input"]
    assert len(inputs) == 4 and all("text" not in i for i in inputs)  # no character recorded


def test_a_handoff_nobody_finishes_fails_human_timeout_and_the_session_goes_on(fleet: Fleet, demo) -> None:
    from browserq import CommandFailed, open_session

    with open_session(settings=QUICK) as s:
        s.navigate(url=f"{demo.url}/login")
        with pytest.raises(CommandFailed) as timed_out:
            s.do("handoff", message="nobody comes", timeout_s=1)
        assert timed_out.value.code == "HUMAN_TIMEOUT" and not timed_out.value.retryable
        assert _store().runs.get_run(s.id).status == "running"
        assert s.get(what="title") == "Login"  # the session goes on
        with pytest.raises(CommandFailed) as bad:
            s.do("handoff", timeout_s=1)  # the template action's fields: message is required
        assert bad.value.code == "INVALID_STEP_INPUT" and "message" in bad.value.message
        session_id = s.id
    [wait] = [h for h in _store().handoffs.handoffs(session_id) if h.kind != "watch"]
    assert wait.outcome == "timeout"
    assert _store().runs.get_run(session_id).status == "completed"


def test_closing_a_session_while_a_person_has_it_ends_the_wait(fleet: Fleet, demo) -> None:
    from browserq import SessionClosed, open_session

    s = open_session(settings=QUICK, max_lifetime_s=600)
    s.navigate(url=f"{demo.url}/login")
    thread, answer = _in_thread(lambda: s.handoff("wait for me", timeout_s=300))
    store = _store()
    wait_until(lambda: store.runs.get_run(s.id).status == "waiting_for_human", WAIT, "the session to wait")
    other_client(s.id).close()
    thread.join(WAIT)
    [gone] = answer
    assert isinstance(gone, SessionClosed) and "closed by its client" in gone.why
    run = wait_until(lambda: (r := store.runs.get_run(s.id)).status == "completed" and r, WAIT, "the session closed")
    assert run.status == "completed"
    [wait] = [h for h in store.handoffs.handoffs(s.id) if h.kind != "watch"]
    assert wait.outcome == "cancelled"
    s._link.close()


def test_a_handoff_whose_worker_dies_is_asked_again_on_the_next_holder(tmp_path, pg_url: str, demo) -> None:
    """As a run's handoff: the wait ends ``interrupted`` with the lost worker, the worker taking
    the session over asks the person again (a new wait, a new link), and the agent's command — still
    waiting — returns what the person did there."""
    from browserq import open_session
    from tests.conftest import producer_env
    from tests.e2e.conftest import REDIS_URL, celery_worker, worker_env
    from tests.sessions.test_session_worker_loss import FAST_TAKEOVER
    from tests.support.processes import kill_group
    from tests.support.templates import write_templates

    templates = write_templates(tmp_path / "templates", {}, copy_from=REPO / "templates")
    config = worker_env(tmp_path, pg_url, REDIS_URL, templates)
    config.env.update(FAST_TAKEOVER)
    fleet = Fleet(config, "redis")
    with producer_env(config.env):
        store = _store()
        with celery_worker(config) as first:
            s = open_session(settings=QUICK)
            s.navigate(url=f"{demo.url}/login")
            box = s.do("eval", expression="(() => { const r = document.querySelector('#username')"
                       ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
            thread, answer = _in_thread(lambda: s.handoff("Type your user name", until={"url": "**/never"},
                                                          timeout_s=300))
            wait_until(lambda: store.runs.get_run(s.id).status == "waiting_for_human", WAIT, "the first wait")
            kill_group(first.pid)
        with celery_worker(config):
            def asked_again() -> bool:
                waits = [h for h in store.handoffs.handoffs(s.id) if h.kind != "watch"]
                return len(waits) == 2 and waits[1].outcome is None and \
                    store.runs.get_run(s.id).status == "waiting_for_human"

            wait_until(asked_again, 120, "the next holder to ask the person again")
            typed = [{"type": "click", "x": box[0], "y": box[1]}, *({"type": "text", "text": c} for c in "ada")]
            assert asyncio.run(_person(_live_link(fleet, s.id), typed)) == []
            thread.join(WAIT)
            [output] = answer
            assert not isinstance(output, BaseException), output
            assert output["outcome"] == "continued" and output["inputs"] == 4
            s.close()
    first_wait, second_wait = [h for h in store.handoffs.handoffs(s.id) if h.kind != "watch"]
    assert (first_wait.outcome, second_wait.outcome) == ("interrupted", "continued")
    assert first_wait.message == second_wait.message == "Type your user name"
    assert second_wait.until == "url '**/never'"  # asked again as it was asked
    inputs = [st for st in store.steps.steps(s.id) if st.step_path == f"{second_wait.step_path}~input"]
    assert len(inputs) == 4  # the person's inputs, on the second holder's page
    run = store.runs.get_run(s.id)
    # (the page's typed text is not checked here: a checkpoint keeps cookies and URLs, not a form's
    # fields, and under load the 4 s lease of this test can be taken over once more)
    assert run.status == "completed" and run.attempt >= 2


def test_show_lists_each_command_with_its_target_and_outcome(fleet: Fleet, demo) -> None:
    """``browserq show SESSION_ID``: a command a row — its target (the ref, selector, locator
    mapping, URL) and its outcome; never a value it typed (a secret or not)."""
    from browserq import CommandFailed, open_session

    with open_session(settings=QUICK, secrets={"password": "pw-Secret-123"}) as s:
        s.navigate(url=f"{demo.url}/login")
        snap = s.snapshot(interactive=True)
        ref = next(line.split("[ref=")[1].split("]")[0] for line in snap.text.splitlines() if "textbox" in line)
        s.fill(ref=ref, value="typed-Value-42")
        s.fill(selector="#password", value="${password}")
        s.click(selector={"role": "button", "name": "Log in"})
        with pytest.raises(CommandFailed):
            s.click(selector="#missing", timeout_s=0.5)
        s.get(what="title")
        session_id = s.id
    expected = [("0", "navigate", f"{demo.url}/login", "succeeded"), ("1", "fill", f"ref {ref}", "succeeded"),
                ("2", "fill", "#password", "succeeded"),
                ("3", "click", '{"name": "Log in", "role": "button"}', "succeeded"),
                ("4", "click", "#missing", "failed"), ("5", "get", "what title", "succeeded")]
    plain = _cli(fleet, "show", session_id)
    assert plain.returncode == 0, plain.stderr
    section = plain.stdout.split("\nCommands\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert section[0].split("\t")[:5] == ["step", "id", "action", "target", "try"]
    rows = [line.split("\t") for line in section[1:]]
    assert [(r[0], r[2], r[3], r[6]) for r in rows] == expected
    assert rows[4][7].startswith("SELECTOR_NOT_FOUND")
    table = _cli(fleet, "show", session_id, FORCE_COLOR="1", COLUMNS="400")  # the terminal's table
    assert table.returncode == 0, table.stderr
    assert "│" in table.stdout and "Commands" in table.stdout and f"ref {ref}" in table.stdout and '"role": "button"' in table.stdout
    for shown in (plain.stdout, table.stdout):
        assert "typed-Value-42" not in shown and "pw-Secret-123" not in shown


def _cli(fleet: Fleet, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return browserq_command(args, env={**fleet.config.env, **env}, cwd=REPO, timeout=120)
