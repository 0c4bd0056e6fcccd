"""Refs through the fleet: a client logs in through a snapshot's refs on a real worker; a ref from
before a navigation is REF_STALE and the session goes on."""

from __future__ import annotations

import re

import pytest

from browserq.demo.site import DEMO_PASSWORD
from tests.sessions.session_fixtures import Fleet, redis_fleet_fixture  # noqa: F401  # the fixture

pytestmark = pytest.mark.slow


def _ref(text: str, pattern: str) -> str:
    found = re.search(pattern + r'[^\n]*\[ref=([^\]]+)\]', text)
    assert found, f"{pattern!r} not in the snapshot:\n{text}"
    return found.group(1)


def test_a_client_logs_in_through_refs_and_an_old_ref_is_stale(redis_fleet: Fleet, demo) -> None:
    from browserq import CommandFailed, open_session

    with open_session(settings={"step_timeout_s": 5, "trace": "off"}, secrets={"password": DEMO_PASSWORD}) as s:
        s.navigate(url=f"{demo.url}/login")
        snap = s.snapshot(interactive=True)
        s.fill(ref=_ref(snap.text, r'textbox "[^"]*[Uu]ser'), value="demo")
        s.fill(ref=_ref(snap.text, r'textbox "[^"]*[Pp]ass'), value="${password}")
        submit = _ref(snap.text, r"button ")
        s.click(ref=submit)
        assert s.get(selector="#welcome", what="text") == "Welcome, demo"
        with pytest.raises(CommandFailed) as stale:
            s.click(ref=submit)  # the login page is gone: its refs name nothing now
        assert stale.value.code == "REF_STALE" and stale.value.epoch is not None
        assert stale.value.epoch > snap.epoch
        assert s.snapshot().epoch == stale.value.epoch  # and the session goes on
