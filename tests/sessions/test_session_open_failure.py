"""A session whose context cannot be opened again ends at once, and its record and its client's
answer hold no secret: the failure's text passes through the session's redactor."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO, producer_env
from tests.e2e.conftest import REDIS_URL, celery_worker, worker_env
from tests.sessions.test_session_takeover_tabs import EVERY_PAGE
from tests.sessions.test_session_worker_loss import FAST_TAKEOVER
from tests.support.http import html_pages, serve_http
from tests.support.polling import wait_until
from tests.support.processes import kill_group
from tests.support.templates import write_templates

pytestmark = pytest.mark.slow

TOKEN = "tok-9f27c1d3e5b8"  # the session's secret, in the URL of the page it was on


def test_an_open_that_fails_with_the_secret_in_its_message_records_it_masked(
        tmp_path: Path, pg_url: str) -> None:
    """The session was on a page whose URL carries its secret; its worker is SIGKILLed and that
    site goes away: the takeover cannot open the checkpoint's page (Chromium's error names the
    URL), the run fails — its error message, and the client's SessionClosed, masked."""
    from browserq import SessionClosed, open_session
    from browserq.store import Store

    templates = write_templates(tmp_path / "templates", {}, copy_from=REPO / "templates")
    config = worker_env(tmp_path, pg_url, REDIS_URL, templates)
    config.env.update({**FAST_TAKEOVER, **EVERY_PAGE})
    store = Store(pg_url)
    try:
        with producer_env(config.env):
            with serve_http(html_pages({"/private": "<html><body><p id=p>private</p></body></html>"})) as host:
                with celery_worker(config) as first:
                    s = open_session(settings={"step_timeout_s": 10, "trace": "off"}, secrets={"token": TOKEN})
                    s.navigate(url=f"http://{host}/private?token=${{token}}")
                    assert s.get(selector="#p", what="text") == "private"
                    wait_until(lambda: (run := store.runs.get_run(s.id)) is not None and run.checkpoint is not None
                               and "/private" in run.checkpoint["url"], 60, "the checkpoint on the private page")
                    kill_group(first.pid)
            # the site is gone: the next holder's context cannot open the checkpoint's page
            with celery_worker(config):
                run = wait_until(lambda: (r := store.runs.get_run(s.id)) is not None and r.status == "failed" and r,
                                 180, "the takeover's open to fail")
                assert run.attempt == 2 and "could not be opened" in (run.error_message or ""), run.error_message
                assert "/private" in (run.error_message or "")  # the URL is named, its secret is not
                assert TOKEN not in (run.error_message or "")
                with pytest.raises(SessionClosed) as closed:
                    s.get(what="url")
                assert TOKEN not in str(closed.value) and TOKEN not in closed.value.why
                s.close()
    finally:
        store.dispose()
