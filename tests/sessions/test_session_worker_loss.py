"""A SIGKILLed worker's session goes on elsewhere: taken over from its last checkpoint (the login
kept), a new epoch, and the side effect that was in flight ends OUTCOME_UNKNOWN — never replayed."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from browserq.demo.site import DEMO_PASSWORD
from tests.conftest import REPO, producer_env
from tests.e2e.conftest import AMQP_URL, REDIS_URL, celery_worker, worker_env
from tests.support.polling import wait_until
from tests.support.processes import kill_group
from tests.support.templates import write_templates

pytestmark = pytest.mark.slow

#: A lease that expires soon and a sweeper that looks often: the takeover comes within seconds.
FAST_TAKEOVER = {"BROWSERQ_LEASE_TTL_S": "4", "BROWSERQ_SWEEP_INTERVAL_S": "2", "BROWSERQ_REQUEUE_AFTER_S": "8"}
#: A side effect that is still running when its worker is killed.
NEVER_ENDING = "new Promise((done) => setTimeout(() => done(1), 120000))"


@pytest.mark.parametrize(("broker", "kind"), [("redis", "write"), ("amqp", "write"), ("redis", "read")])
def test_a_killed_workers_session_goes_on_elsewhere(tmp_path: Path, pg_url: str, demo, broker: str,
                                                    kind: str) -> None:
    """``write``: a side effect in flight ends OUTCOME_UNKNOWN; ``read``: a read in flight fails
    retryable (WORKER_LOST); neither is run again."""
    from browserq import CommandFailed, open_session
    from browserq.store import Store

    templates = write_templates(tmp_path / "templates", {}, copy_from=REPO / "templates")
    config = worker_env(tmp_path, pg_url, REDIS_URL if broker == "redis" else AMQP_URL, templates)
    config.env.update(FAST_TAKEOVER)
    store = Store(pg_url)
    with producer_env(config.env):
        with celery_worker(config) as first:
            s = open_session(settings={"step_timeout_s": 60, "trace": "off", "allow_eval": True},
                             secrets={"password": DEMO_PASSWORD})
            s.navigate(url=f"{demo.url}/login")
            s.fill(selector="#username", value="demo")
            s.fill(selector="#password", value="${password}")
            s.click(selector="button[type=submit]")
            epoch = s.epoch
            in_flight: dict[str, Any] = {}

            def side_effect() -> None:
                try:
                    in_flight["output"] = s.do("eval", expression=NEVER_ENDING, side_effect=kind == "write")
                except Exception as exc:
                    in_flight["error"] = exc

            sender = threading.Thread(target=side_effect)
            sender.start()
            wait_until(lambda: any(st.action == "eval" for st in store.steps.steps(s.id)), 60,
                       "the side effect's record, written ahead")
            kill_group(first.pid)
        with celery_worker(config):
            sender.join(180)
            assert not sender.is_alive()
            failed = in_flight.get("error")
            assert isinstance(failed, CommandFailed), in_flight
            if kind == "write":
                assert failed.code == "OUTCOME_UNKNOWN" and not failed.retryable
            else:
                assert failed.code == "WORKER_LOST" and failed.retryable
            assert s.get(selector="#welcome", what="text") == "Welcome, demo"  # the login was kept
            assert s.epoch is not None and epoch is not None and s.epoch > epoch
            s.close()
    try:
        evals = [st for st in store.steps.steps(s.id) if st.action == "eval"]
        assert [st.status for st in evals] == ["unknown"]  # never run a second time
        run = store.runs.get_run(s.id)
        assert run is not None and run.status == "completed" and run.attempt == 2
    finally:
        store.dispose()
