"""A session taken over after its worker was SIGKILLed goes on on the tab it was on: every page
it had open is opened again at its URL, in its place, the cookies kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from browserq.demo.site import DEMO_PASSWORD
from tests.conftest import REPO, producer_env
from tests.e2e.conftest import REDIS_URL, celery_worker, worker_env
from tests.sessions.test_session_worker_loss import FAST_TAKEOVER
from tests.support.polling import wait_until
from tests.support.processes import kill_group
from tests.support.templates import write_templates

pytestmark = pytest.mark.slow

#: A checkpoint after every command that lands on a new page (none skipped by the interval).
EVERY_PAGE = {"BROWSERQ_CHECKPOINT_INTERVAL_MS": "0"}


def test_a_taken_over_session_goes_on_on_its_tab_with_its_other_tab_and_cookies(
        tmp_path: Path, pg_url: str, demo) -> None:
    from browserq import open_session
    from browserq.store import Store

    templates = write_templates(tmp_path / "templates", {}, copy_from=REPO / "templates")
    config = worker_env(tmp_path, pg_url, REDIS_URL, templates)
    config.env.update({**FAST_TAKEOVER, **EVERY_PAGE})
    store = Store(pg_url)
    try:
        with producer_env(config.env):
            with celery_worker(config) as first:
                s = open_session(settings={"step_timeout_s": 30, "trace": "off", "allow_eval": True},
                                 secrets={"password": DEMO_PASSWORD})
                s.navigate(url=f"{demo.url}/login")
                s.fill(selector="#username", value="demo")
                s.fill(selector="#password", value="${password}")
                s.click(selector="button[type=submit]")
                assert s.get(what="url") == f"{demo.url}/account"
                s.do("eval", expression="(window.open('/quotes/page/2'), 1)[1]")
                s.do("switch_tab", to="last")
                s.navigate(url=f"{demo.url}/quotes/page/3")  # lands on a new page: a checkpoint
                wait_until(lambda: ((run := store.runs.get_run(s.id)) is not None and run.checkpoint is not None
                                    and run.checkpoint.get("tab") == {"index": 1, "open": 2}), 60,
                           "the checkpoint on the second tab")
                kill_group(first.pid)
            with celery_worker(config):
                wait_until(lambda: (run := store.runs.get_run(s.id)) is not None and run.attempt == 2
                           and run.status == "running", 180, "the session to be taken over")
                assert s.get(what="url") == f"{demo.url}/quotes/page/3"  # on the tab it was on
                s.do("switch_tab", to=0)
                assert s.get(what="url") == f"{demo.url}/account"  # its other tab, in its place
                assert s.get(selector="#welcome", what="text") == "Welcome, demo"  # the login kept
                s.close()
        run = store.runs.get_run(s.id)
        assert run is not None and run.status == "completed" and run.attempt == 2
    finally:
        store.dispose()
