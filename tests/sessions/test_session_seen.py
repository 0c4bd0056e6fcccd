"""A session seen like a run, against a real prefork worker (Redis broker, PostgreSQL result
backend) with ``BROWSERQ_METRICS_PORT``: its open task's state is its progress (Flower,
``AsyncResult(s.id)``) then its end, ``/metrics`` counts its opening, commands and end, the report
shows its commands in order, and ``browserq live SESSION_ID`` shows its page, view only."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery

from tests.conftest import REPO
from tests.metrics.scrape import scrape
from tests.sessions.session_fixtures import Fleet, session_fleet
from tests.support.cli_zygote import browserq_command
from tests.support.http import free_port
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow

QUICK = {"step_timeout_s": 5, "trace": "off"}


@pytest.fixture(name="watched", scope="module")
def watched_fixture(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[tuple[Fleet, int]]:
    port = free_port()
    with session_fleet(tmp_path_factory.mktemp("sessions-seen"), pg_url, "redis",
                       BROWSERQ_METRICS_PORT=str(port), BROWSERQ_PROGRESS_INTERVAL_MS="0", BROWSERQ_LIVE_VIEW_WHILE_RUNNING="true") as fleet:
        yield fleet, port


def task_meta(fleet: Fleet, task_id: str) -> dict[str, Any]:
    app = Celery("seen", backend=fleet.config.env["BROWSERQ_RESULT_BACKEND"], set_as_current=False)
    try:
        app.backend.result_extended = False
        return dict(app.backend.get_task_meta(task_id))
    finally:
        app.close()


def test_a_sessions_task_shows_its_progress_then_how_it_ended(watched: tuple[Fleet, int], demo) -> None:
    from browserq import CommandFailed, open_session

    fleet, _port = watched
    with open_session(settings=QUICK) as s:
        opened = wait_until(lambda: (m := task_meta(fleet, s.id))["status"] == "PROGRESS" and m, 60,
                            "the session's task to show PROGRESS")
        assert opened["result"]["kind"] == "session" and opened["result"]["commands"] == 0
        s.navigate(url=f"{demo.url}/login")
        with pytest.raises(CommandFailed):
            s.click(selector="#no-such-button", timeout_s=0.5)
        info = wait_until(lambda: (m := task_meta(fleet, s.id)["result"]) and m.get("commands") == 2 and m, 60,
                          "the second command in the task's progress")
        assert info["status"] == "open" and info["run_id"] == s.id
        assert info["last"]["action"] == "click" and info["last"]["outcome"] == "SELECTOR_NOT_FOUND"
        assert info["url"].endswith("/login") and info["idle_since"] and info["epoch"] == s.epoch
        session_id = s.id
    ended = wait_until(lambda: (m := task_meta(fleet, session_id))["status"] == "SUCCESS" and m, 60,
                       "the task's SUCCESS once the session closed")
    assert ended["result"] == {"run_id": session_id, "kind": "session", "status": "completed", "code": None,
                               "why": "closed by its client", "commands": 2}


def test_metrics_count_sessions_and_their_commands(watched: tuple[Fleet, int], demo) -> None:
    from browserq import CommandFailed, open_session

    _fleet, port = watched
    before = scrape(port)
    seen: list[str] = []  # what the gauge read, for the message should it never read 1

    def held_now(count: int) -> Any:
        samples = scrape(port)
        seen.append(f"{samples.get('browserq_sessions_held', state='open')}")
        return samples if samples.get("browserq_sessions_held", state="open") == count else None

    with open_session(settings=QUICK) as s:
        try:
            held = wait_until(lambda: held_now(1), 60, "one held")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the gauge read {seen[:3]} … {seen[-3:]}; held at the start: "
                                 f"{before.get('browserq_sessions_held', state='open')}") from None
        assert held.total("browserq_sessions_opened_total", kind="opened") == \
            before.total("browserq_sessions_opened_total", kind="opened") + 1
        s.navigate(url=f"{demo.url}/login")
        s.snapshot()
        with pytest.raises(CommandFailed):
            s.do("no_such_action")
    after = wait_until(lambda: held_now(0), 60, "none held")

    def grew(name: str, **labels: str) -> float:
        return after.total(name, **labels) - before.total(name, **labels)

    assert grew("browserq_sessions_closed_total", status="completed", code="") == 1
    assert grew("browserq_session_commands_total", action="navigate", outcome="ok") == 1
    assert grew("browserq_session_commands_total", action="snapshot", outcome="ok") == 1
    assert grew("browserq_session_commands_total", action="other", outcome="INVALID_STEP_INPUT") == 1
    assert grew("browserq_session_command_duration_seconds_count", action="navigate") == 1


def test_the_report_shows_the_sessions_commands_in_order(watched: tuple[Fleet, int], demo, tmp_path: Path) -> None:
    from browserq import CommandFailed, open_session

    fleet, _port = watched
    with open_session(settings=QUICK) as s:
        s.navigate(url=f"{demo.url}/login")
        snap = s.snapshot(interactive=True)
        ref = next(line.split("[ref=")[1].split("]")[0] for line in snap.text.splitlines() if "textbox" in line)
        s.fill(ref=ref, value="demo")
        with pytest.raises(CommandFailed):
            s.click(selector="#no-such-button", timeout_s=0.5)
        session_id = s.id
    page = tmp_path / "session.html"
    done = browserq_command(["report", session_id, "-o", str(page)], env=fleet.config.env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    section = html[html.index('<section class="card" id="session">'):]
    section = section[:section.index("</section>")]
    order = [section.index(text) for text in (f"{demo.url}/login", "the page is now", f"ref {ref}",
                                              "#no-such-button", "SELECTOR_NOT_FOUND", "closed by its client")]
    assert order == sorted(order), section
    assert "3 commands · 1 failed" in section


def test_browserq_live_shows_a_held_sessions_page_view_only(watched: tuple[Fleet, int], demo) -> None:
    from browserq import open_session
    from tests.live.test_watch import _watch

    fleet, _port = watched
    with open_session(settings=QUICK) as s:
        s.navigate(url=f"{demo.url}/login")
        done = browserq_command(["live", s.id], env=fleet.config.env, cwd=REPO, timeout=120)
        assert done.returncode == 0, done.stderr
        link = done.stdout.strip().splitlines()[-1]
        seen = asyncio.run(_watch(link))
        assert seen["status"] == 200 and "View only" in seen["html"]
        assert seen["frame"] == "frame" and "view only" in seen["refusal"]
        assert s.get(what="title")  # the session goes on, untouched
        session_id = s.id
    gone = browserq_command(["live", session_id], env=fleet.config.env, cwd=REPO, timeout=120)
    assert gone.returncode != 0 and "completed" in gone.stderr
