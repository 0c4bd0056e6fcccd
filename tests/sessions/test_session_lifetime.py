"""A session's lifetime and the fleet's room for sessions: idle timeout, capacity per process and
per fleet — each recorded, none a hang."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.sessions.session_fixtures import session_fleet
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow

QUICK = {"step_timeout_s": 5, "trace": "off"}


def test_an_idle_session_is_closed_and_its_run_says_why(tmp_path: Path, pg_url: str, demo) -> None:
    from browserq import SessionClosed, open_session
    from browserq.store import Store

    with session_fleet(tmp_path, pg_url, "redis"):
        s = open_session(settings=QUICK, idle_timeout_s=1)
        s.navigate(url=f"{demo.url}/quotes/")
        store = Store(pg_url)
        try:
            run = wait_until(lambda: (r := store.runs.get_run(s.id)) is not None and r.status == "cancelled" and r,
                             60, "the idle session to be closed")
            assert run.error_code == "SESSION_IDLE" and "idle_timeout_s" in (run.error_message or "")
        finally:
            store.dispose()
        with pytest.raises(SessionClosed) as closed:
            s.get(what="url")
        assert "SESSION_IDLE" in closed.value.why or "idle" in closed.value.why
        s.close()  # closing a closed session is quiet


def test_a_full_process_and_a_full_fleet_answer_session_capacity(tmp_path: Path, pg_url: str, demo) -> None:
    from browserq import SessionCapacity, open_session
    from browserq.settings import reset_settings_cache
    from browserq.store import Store

    with session_fleet(tmp_path, pg_url, "redis", BROWSERQ_SESSION_MAX_PER_PROCESS="1"):
        with open_session(settings=QUICK) as held:
            with pytest.raises(SessionCapacity) as full:
                open_session(settings=QUICK)
            assert full.value.retry_after_s == 2 and "BROWSERQ_SESSION_MAX_PER_PROCESS=1" in str(full.value)
            store = Store(pg_url)
            try:
                refused = next(r for r in store.runs.list_runs(template="session", limit=5) if r.id != held.id)
                assert refused.status == "cancelled" and refused.error_code == "SESSION_CAPACITY"
            finally:
                store.dispose()
            os.environ["BROWSERQ_SESSION_MAX_PER_FLEET"] = "1"
            reset_settings_cache()
            try:
                with pytest.raises(SessionCapacity) as fleet_full:
                    open_session(settings=QUICK)
                assert "BROWSERQ_SESSION_MAX_PER_FLEET=1" in str(fleet_full.value)
            finally:
                del os.environ["BROWSERQ_SESSION_MAX_PER_FLEET"]
                reset_settings_cache()
            assert held.get(what="url") == "about:blank"  # the session that had room goes on


def test_a_threads_worker_holds_sessions_and_still_runs_templates(tmp_path: Path, pg_url: str, demo) -> None:
    """``--pool threads -c 1``: the open task returns; the one thread is free for a template run."""
    from browserq import CommandFailed, open_session, run_template

    with session_fleet(tmp_path, pg_url, "redis", pool="threads"):
        with open_session(settings=QUICK) as first, open_session(settings=QUICK) as second:
            first.navigate(url=f"{demo.url}/quotes/")
            value = run_template.delay("quotes@1.2", params={"start_url": f"{demo.url}/quotes/"}).get(timeout=180)
            assert value["status"] == "completed", value
            with pytest.raises(CommandFailed):
                second.click(selector="#nothing-here")
            assert first.get(what="url") == f"{demo.url}/quotes/"
            assert second.get(what="url") == "about:blank"


def test_a_stopping_worker_closes_its_sessions_and_records_why(tmp_path: Path, pg_url: str, demo) -> None:
    from browserq import SessionClosed, open_session
    from browserq.store import Store

    with session_fleet(tmp_path, pg_url, "redis"):
        s = open_session(settings=QUICK)
        s.navigate(url=f"{demo.url}/quotes/")
    # the worker was stopped (SIGTERM, a warm shutdown) when the fleet's block ended
    store = Store(pg_url)
    try:
        run = store.runs.get_run(s.id)
        assert run is not None and run.status == "cancelled", run
        assert "worker process is stopping" in (run.error_message or "")
    finally:
        store.dispose()
    with pytest.raises(SessionClosed):
        s.get(what="url")
    s.close()


def test_a_session_past_its_lifetime_is_closed_and_its_client_told_why(tmp_path: Path, pg_url: str, demo) -> None:
    """``max_lifetime_s`` given at open, and ``BROWSERQ_SESSION_MAX_LIFETIME_S`` (the most any
    session lives): each closes its session, recorded ``SESSION_LIFETIME``."""
    from browserq import SessionClosed, open_session
    from browserq.store import Store

    with session_fleet(tmp_path, pg_url, "redis", BROWSERQ_SESSION_MAX_LIFETIME_S="4"):
        asked = open_session(settings=QUICK, max_lifetime_s=1)
        capped = open_session(settings=QUICK, max_lifetime_s=600)  # the fleet's 4 s win
        store = Store(pg_url)
        try:
            for s in (asked, capped):
                run = wait_until(lambda s=s: (r := store.runs.get_run(s.id)) is not None
                                 and r.status == "cancelled" and r, 60, "the session's lifetime to end it")
                assert run.error_code == "SESSION_LIFETIME" and "max_lifetime_s" in (run.error_message or "")
        finally:
            store.dispose()
        for s in (asked, capped):
            with pytest.raises(SessionClosed) as closed:
                s.get(what="url")
            assert "max_lifetime_s" in closed.value.why, closed.value.why
            s.close()
