"""Sessions against real workers: a client drives a live context one command at a time through
the broker (Redis and RabbitMQ), each command recorded as a step attempt of the session's run."""

from __future__ import annotations

import pytest

from browserq.demo.site import DEMO_PASSWORD
from tests.sessions.session_fixtures import Fleet, fleet_fixture, redis_fleet_fixture  # noqa: F401  # fixtures

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
        run = store.get_run(session_id)
        assert run is not None and run.status == "completed" and run.template_name == "session"
        steps = [(st.step_path, st.action, st.status, st.error_code) for st in store.steps(session_id)]
        assert steps == [
            ("0", "navigate", "succeeded", None), ("1", "fill", "succeeded", None),
            ("2", "fill", "succeeded", None), ("3", "click", "succeeded", None),
            ("4", "get", "succeeded", None), ("5", "click", "failed", "SELECTOR_NOT_FOUND"),
            ("6", "fill", "succeeded", None), ("7", "fill", "succeeded", None),
            ("8", "click", "succeeded", None), ("9", "get", "succeeded", None),
        ]
        assert DEMO_PASSWORD not in repr(store.steps(session_id)) and DEMO_PASSWORD not in repr(run)
    finally:
        store.dispose()
