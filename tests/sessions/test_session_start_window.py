"""A command carries a start window on the database's clock: one that reaches the session's worker
after it (a worker lost before starting it; a broker's redelivery an hour late) is never run — its
client may have given up on it and sent it again."""

from __future__ import annotations

import time

import pytest

from browserq.settings import Settings
from browserq.submit.sessions import Session
from tests.sessions.session_fixtures import Fleet, redis_fleet_fixture  # noqa: F401  # fixtures

pytestmark = pytest.mark.slow

QUICK = {"step_timeout_s": 5, "trace": "off"}


def test_a_command_past_its_start_window_is_not_run_and_the_session_goes_on(redis_fleet: Fleet, demo,
                                                                            pg_url: str) -> None:
    from browserq import open_session
    from browserq.store import Store

    with open_session(settings=QUICK) as s:
        s.navigate(url=f"{demo.url}/quotes/")
        before = demo.hits("/login")
        # What a late redelivery looks like: a navigation whose window closed a minute ago.
        late = {"kind": "command", "action": "navigate", "fields": {"url": f"{demo.url}/login"},
                "side_effect": True, "session": s.id, "start_by": time.time() + s._clock_offset_s - 60}
        correlation_id = s._link.send(s._queue, late)
        reply = s._link.wait(correlation_id, 60, s._why_ended, s.id)
        assert reply is not None and reply["ok"] is False, reply
        assert reply["error"]["code"] == "COMMAND_EXPIRED" and reply["error"]["retryable"], reply
        assert "not run" in reply["error"]["message"]
        assert demo.hits("/login") == before  # the page was never asked for
        # the session goes on, and a command in its window runs
        assert s.get(selector="h1", what="text")
        s.navigate(url=f"{demo.url}/login")
        assert demo.hits("/login") == before + 1
        session_id = s.id
    store = Store(pg_url)
    try:
        actions = [st.action for st in store.steps.steps(session_id)]
    finally:
        store.dispose()
    assert actions == ["navigate", "get", "navigate"], actions  # the late command left no record


def test_no_reply_in_time_says_whether_sending_again_is_safe() -> None:
    from browserq import CommandFailed

    settings = Settings(session_side_effect_actions=["click"])
    session = Session("r1", link=None, services=None, settings=settings, step_timeout_s=5)  # type: ignore[arg-type]
    read = session._no_reply({"kind": "command", "action": "get"}, 35)
    assert isinstance(read, CommandFailed) and (read.code, read.retryable) == ("WORKER_LOST", True)
    for write in ({"kind": "command", "action": "fill", "side_effect": True},
                  {"kind": "command", "action": "click"},
                  {"kind": "batch", "steps": [{"action": "get"}, {"action": "click"}]}):
        unknown = session._no_reply(write, 35)
        assert (unknown.code, unknown.retryable) == ("OUTCOME_UNKNOWN", False), write
        assert "may or may not have happened" in unknown.message
