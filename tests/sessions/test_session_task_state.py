"""Against a real prefork worker (Redis broker, PostgreSQL result backend, ``BROWSERQ_METRICS_PORT``):

- a session's open task delivered again after the session ended (a duplicate) leaves the task's
  final state alone (it used to overwrite it with SUCCESS ``{"session": "ended"}``);
- ``browserq_runs_waiting_for_human`` reaches ``/metrics`` from the prefork child whose session
  waits for a person (unlabelled, it never left the child's memory).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from browserq.tasks.session_task import SESSION_TASK_NAME
from tests.metrics.scrape import scrape
from tests.sessions.session_fixtures import Fleet, session_fleet
from tests.sessions.test_session_seen import task_meta
from tests.support.http import free_port
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow

QUICK = {"step_timeout_s": 5, "trace": "off"}
WAIT = 60


@pytest.fixture(name="metered", scope="module")
def metered_fixture(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[tuple[Fleet, int]]:
    port = free_port()
    with session_fleet(tmp_path_factory.mktemp("sessions-task-state"), pg_url, "redis",
                       BROWSERQ_METRICS_PORT=str(port), BROWSERQ_PROGRESS_INTERVAL_MS="0") as fleet:
        yield fleet, port


def test_a_duplicate_open_after_the_session_ended_keeps_the_tasks_final_state(metered: tuple[Fleet, int]) -> None:
    from browserq import open_session
    from browserq.settings import get_settings
    from browserq.submit.session_link import SessionLink
    from browserq.tasks.app import app

    fleet, _port = metered
    s = open_session(settings=QUICK, idle_timeout_s=1)  # it idles out: REVOKED (Celery keeps only SUCCESS)
    s.get(what="title")
    session_id = s.id
    final = wait_until(lambda: (m := task_meta(fleet, session_id))["status"] == "REVOKED" and m, WAIT,
                       "the task's final state")
    s._link.close()
    assert "idle_timeout_s" in str(final["result"])  # the session's end (REVOKED holds its why)
    link = SessionLink(get_settings().broker_url)
    try:  # the same message again (a broker's duplicate delivery), under the session's task id
        app.send_task(SESSION_TASK_NAME, kwargs={"run_id": session_id, "reply_to": link.queue.name,
                                                 "correlation_id": "again"},
                      queue=fleet.config.queue, task_id=session_id)
        reply = link.wait("again", WAIT, lambda: None, session_id)
    finally:
        link.close()
    assert reply is not None and "already ended" in reply["closed"]
    # -c 1: this session's open task runs after the duplicate's task has returned and stored its state
    with open_session(settings=QUICK) as later:
        later.get(what="title")
    after = task_meta(fleet, session_id)
    assert (after["status"], after["date_done"], str(after["result"])) == \
        (final["status"], final["date_done"], str(final["result"]))


def test_a_session_waiting_for_a_person_is_counted_on_metrics(metered: tuple[Fleet, int], demo) -> None:
    from browserq import SessionClosed, open_session
    from tests.sessions.test_session_handoff import _in_thread, other_client

    _fleet, port = metered
    s = open_session(settings=QUICK)
    s.navigate(url=f"{demo.url}/login")
    asking, answer = _in_thread(lambda: s.handoff("nobody will come", timeout_s=600))
    counted = wait_until(lambda: (m := scrape(port)).get("browserq_runs_waiting_for_human", template="session") == 1
                         and m, WAIT, "the waiting session on /metrics")
    assert counted.total("browserq_runs_waiting_for_human") == 1
    other_client(s.id).close()  # closing the session ends the wait
    asking.join(WAIT)
    assert isinstance(answer[0], SessionClosed)
    s._link.close()
    ended = wait_until(lambda: (m := scrape(port)).get("browserq_runs_waiting_for_human", template="session") == 0
                       and m, WAIT, "no waiting session on /metrics")
    assert ended.total("browserq_handoffs_total", outcome="interrupted") == 1
