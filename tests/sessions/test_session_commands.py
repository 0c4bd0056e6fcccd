"""Sessions against real workers: a client drives a live context one command at a time through
the broker (Redis and RabbitMQ), each command recorded as a step attempt of the session's run."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from browserq.demo.site import DEMO_PASSWORD
from tests.conftest import REPO
from tests.sessions.session_fixtures import Fleet, fleet_fixture, redis_fleet_fixture  # noqa: F401  # fixtures
from tests.support.cli_zygote import browserq_command

pytestmark = pytest.mark.slow

QUICK = {"step_timeout_s": 5, "trace": "off"}


def test_a_client_logs_in_and_sends_a_form_one_command_at_a_time(fleet: Fleet, demo, pg_url: str) -> None:
    from browserq import CommandFailed, open_session
    from browserq.store import Store

    with open_session(settings=QUICK, secrets={"password": DEMO_PASSWORD}) as s:
        s.navigate(url=f"{demo.url}/login")
        s.fill(selector="#username", value="demo")
        s.fill(selector="#password", value="${password}")
        s.click(selector="button[type=submit]")
        assert s.get(selector="#welcome", what="text") == "Welcome, demo"
        with pytest.raises(CommandFailed) as missing:
            s.click(selector="#no-such-button")
        assert missing.value.code == "SELECTOR_NOT_FOUND" and missing.value.retryable
        # the session is still usable after the failure
        s.fill(selector="#name", value="Ada")
        s.fill(selector="#message", value="from a session")
        s.click(selector="#send", side_effect=True)
        assert "Thanks, Ada!" in s.get(selector="#confirmation", what="text")
        session_id = s.id
    assert demo.submissions and demo.submissions[-1]["name"] == "Ada"

    store = Store(pg_url)
    try:
        run = store.runs.get_run(session_id)
        assert run is not None and run.status == "completed" and run.template_name == "session"
        steps = [(st.step_path, st.action, st.status, st.error_code) for st in store.steps.steps(session_id)]
        assert steps == [
            ("0", "navigate", "succeeded", None), ("1", "fill", "succeeded", None),
            ("2", "fill", "succeeded", None), ("3", "click", "succeeded", None),
            ("4", "get", "succeeded", None), ("5", "click", "failed", "SELECTOR_NOT_FOUND"),
            ("6", "fill", "succeeded", None), ("7", "fill", "succeeded", None),
            ("8", "click", "succeeded", None), ("9", "get", "succeeded", None),
        ]
        assert DEMO_PASSWORD not in repr(store.steps.steps(session_id)) and DEMO_PASSWORD not in repr(run)
    finally:
        store.dispose()
    # seen like runs: `runs --kind session` lists it, `show` shows its commands as steps
    listed = _cli(fleet, "runs", "--kind", "session", "--json")
    assert listed.returncode == 0 and session_id in listed.stdout, listed.stderr
    shown = _cli(fleet, "show", session_id)
    assert shown.returncode == 0 and "SELECTOR_NOT_FOUND" in shown.stdout and DEMO_PASSWORD not in shown.stdout


def _cli(fleet: Fleet, *args: str) -> subprocess.CompletedProcess[str]:
    return browserq_command(args, env=fleet.config.env, cwd=REPO, timeout=120)


def test_bad_input_and_batches_come_back_as_command_failures(redis_fleet: Fleet, demo) -> None:
    from browserq import CommandFailed, open_session

    with open_session(settings=QUICK, allowed_domains=["127.0.0.1"]) as s:
        with pytest.raises(CommandFailed) as denied:
            s.navigate(url="http://elsewhere.example/")
        assert denied.value.code in ("URL_DENIED", "DOMAIN_DENIED") and not denied.value.retryable
        with pytest.raises(CommandFailed) as unknown:
            s.do("teleport", to="mars")
        assert unknown.value.code == "INVALID_STEP_INPUT" and "teleport" in unknown.value.message
        with pytest.raises(CommandFailed) as extra:
            s.do("navigate", url=f"{demo.url}/quotes/", colour="blue")
        assert extra.value.code == "INVALID_STEP_INPUT" and "colour" in extra.value.message
        outputs = s.steps([
            {"action": "navigate", "url": f"{demo.url}/quotes/"},
            {"action": "get", "what": "url"},
        ], timeout_s=30)
        assert outputs[1] == f"{demo.url}/quotes/"
        with pytest.raises(CommandFailed) as stopped:
            s.steps([{"action": "click", "selector": "#nothing-here"}, {"action": "get", "what": "url"}],
                    stop_on_error=True, timeout_s=30)
        assert stopped.value.code == "SELECTOR_NOT_FOUND"
        assert len(stopped.value.results) == 1  # the step after the failure never ran
        assert s.get(what="title")  # and the session is still there


def test_two_sessions_at_once_never_share_cookies(redis_fleet: Fleet, demo) -> None:
    from browserq import open_session

    with open_session(settings=QUICK, secrets={"password": DEMO_PASSWORD}) as first, \
            open_session(settings=QUICK) as second:
        first.navigate(url=f"{demo.url}/login")
        first.fill(selector="#username", value="demo")
        first.fill(selector="#password", value="${password}")
        first.click(selector="button[type=submit]")
        assert first.get(what="url") == f"{demo.url}/account"
        second.navigate(url=f"{demo.url}/account")
        assert second.get(what="url") == f"{demo.url}/login"  # not logged in: sent to the login page
        assert first.get(selector="#welcome", what="text") == "Welcome, demo"


def test_an_idle_session_holds_no_celery_slot(redis_fleet: Fleet, demo) -> None:
    """The worker runs one task at a time (-c 1); a session opened there leaves it free."""
    from browserq import open_session, run_template

    with open_session(settings=QUICK) as s:
        s.navigate(url=f"{demo.url}/quotes/")
        result = run_template.delay("quotes@1.2", params={"start_url": f"{demo.url}/quotes/"})
        value = result.get(timeout=180)
        assert value["status"] == "completed", value
        assert s.get(what="url") == f"{demo.url}/quotes/"  # the session went on meanwhile


def test_the_async_twin_drives_a_session(redis_fleet: Fleet, demo) -> None:
    from browserq import CommandFailed, open_session_async

    async def drive() -> str:
        s = await open_session_async(settings=QUICK)
        async with s:
            await s.navigate(url=f"{demo.url}/quotes/")
            with pytest.raises(CommandFailed):
                await s.click(selector="#nothing-here")
            return str(await s.get(what="url"))

    assert asyncio.run(drive()) == f"{demo.url}/quotes/"


def test_a_reply_carries_no_secret_in_clear(redis_fleet: Fleet, demo) -> None:
    """A reply is bytes on the broker: a value that is the session's secret comes back masked,
    as it is in every record (the page itself holds it in clear)."""
    from browserq import open_session

    with open_session(settings=QUICK, secrets={"password": DEMO_PASSWORD}) as s:
        s.navigate(url=f"{demo.url}/login")
        s.fill(selector="#username", value="${password}")
        read_back = s.get(selector="#username", what="value")
    assert isinstance(read_back, str) and read_back and DEMO_PASSWORD not in read_back
