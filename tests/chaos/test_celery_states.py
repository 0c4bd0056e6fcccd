"""Celery's state of a run's task tells the truth, as the producer and Flower see it.

Real prefork workers on Redis (broker and result backend) and PostgreSQL, and Flower itself in a
subprocess: a failed and a needs_review run end FAILURE with ``browserq.RunFailed`` carrying the
run's result dict (listed by Flower's ``/api/tasks?state=FAILURE``); a cancelled run and one
stopped with Flower's Terminate end REVOKED and are recorded ``cancelled`` (not ``RUN_TIMEOUT``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from celery.exceptions import TaskRevokedError

from browserq.demo.site import DEMO_PASSWORD
from browserq.errors import RunFailed
from browserq.store import Store
from tests.chaos.conftest import (
    FINAL,
    REDIS_URL,
    TEMPLATES,
    Cluster,
    owner_pid,
    producer,
    running_runs,
    wait_for,
)
from tests.support.http import free_port
from tests.support.templates import write_templates

pytestmark = [pytest.mark.slow, pytest.mark.chaos, pytest.mark.timeout(420)]

STATE_TEMPLATES = {
    "state_ok": """
params: {base_url: {type: url, required: true}}
settings: {trace: off, step_timeout_s: 15}
steps:
  - {action: navigate, url: "${base_url}/quotes/"}
  - {action: get, what: title, into: title}
""",
    "state_bad": """
params: {base_url: {type: url, required: true}}
settings: {trace: off, step_timeout_s: 15}
steps:
  - {action: navigate, url: "${base_url}/quotes/"}
  - {action: get, what: title, into: title}
  - {id: check, action: assert, selector: "#no-such-element", message: "the page has no #no-such-element"}
""",
    "state_slow": """
params: {base_url: {type: url, required: true}}
settings: {trace: off, timeout_s: 100, step_timeout_s: 90, run_retries: 0}
steps:
  - {action: navigate, url: "${base_url}/slow?ms=55000"}
""",
    "state_order": """
params:
  base_url: {type: url, required: true}
  password: {type: secret, required: true}
settings: {trace: off, step_timeout_s: 20}
steps:
  - {action: navigate, url: "${base_url}/login"}
  - {action: fill, selector: "#username", value: demo}
  - {action: fill, selector: "#password", value: "${password}"}
  - {action: click, selector: "button[type=submit]"}
  - {action: fill, selector: "#name", value: "States"}
  - {action: fill, selector: "#message", value: "order ${run.id}"}
  - {id: send, action: click, selector: "#send", side_effect: true}
""",
}


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


class Flower:
    def __init__(self, cluster: Cluster) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cluster.env["FLOWER_UNAUTHENTICATED_API"] = "true"
        cluster._spawn("flower", ["flower", f"--port={self.port}", "--address=127.0.0.1"])
        wait_for(self._up, 60, "flower to listen")

    def _up(self) -> bool:
        try:
            return isinstance(_get_json(f"{self.url}/api/tasks?limit=1"), dict)
        except OSError:
            return False

    def tasks(self, state: str) -> dict[str, Any]:
        return _get_json(f"{self.url}/api/tasks?state={state}")

    def task_events(self, task: str) -> dict[str, float]:
        """``{event type: count}`` of one task name, summed over workers, from Flower's ``/metrics``."""
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=10) as response:
            text = response.read().decode()
        counts: dict[str, float] = {}
        for labels, value in re.findall(r"^flower_events_total\{(.*)\} (\S+)$", text, re.M):
            found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
            if found.get("task") == task:
                counts[found["type"]] = counts.get(found["type"], 0.0) + float(value)
        return counts

    def terminate(self, task_id: str) -> None:
        """What Flower's Terminate button does: ``revoke(task_id, terminate=True)`` (SIGTERM)."""
        request = urllib.request.Request(f"{self.url}/api/task/revoke/{task_id}?terminate=true", method="POST", data=b"")
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200


@pytest.fixture
def state_cluster(make_cluster, tmp_path: Path) -> Cluster:
    templates = write_templates(tmp_path / "templates", STATE_TEMPLATES, copy_from=TEMPLATES)
    return make_cluster(
        BROWSERQ_RESULT_BACKEND=REDIS_URL, BROWSERQ_TEMPLATES_DIR=str(templates),
        BROWSERQ_REQUEUE_AFTER_S="600",  # no sweeper re-sends of queued runs in these tests
        BROWSERQ_SWEEP_IN_WORKERS="true",  # but expired leases are swept, as by default
    )


@pytest.fixture
def flower(state_cluster: Cluster) -> Flower:
    """Flower on the state cluster, started before its workers so that it sees every task."""
    return Flower(state_cluster)


def test_failed_and_needs_review_runs_end_failure_with_runfailed(state_cluster: Cluster, flower: Flower, demo,
                                                                 pg_url: str, store: Store) -> None:
    cluster = state_cluster
    cluster.start_worker("w1", concurrency=1)
    from browserq import run_template

    with producer(cluster, pg_url):
        ok = run_template.delay("state_ok", params={"base_url": demo.url})
        bad = run_template.delay("state_bad", params={"base_url": demo.url})
        value = ok.get(timeout=120)
        assert value["status"] == "completed" and value["run_id"] == ok.id and ok.state == "SUCCESS"

        with pytest.raises(RunFailed) as raised:
            bad.get(timeout=120)
        failed = raised.value
        run = store.runs.get_run(bad.id)
        assert run.status == "failed" and run.attempt == 1  # no Celery retry of an expected outcome
        assert failed.result == {
            "run_id": bad.id, "status": "failed", "outputs": run.outputs,
            "error": {"code": "ASSERTION_FAILED", "message": run.error_message, "step": run.error_step_path},
            "warnings": [],
        }
        assert (failed.run_id, failed.status, failed.code, failed.step) == (bad.id, "failed", "ASSERTION_FAILED", "2")
        assert failed.outputs["title"] and "#no-such-element" in failed.message
        assert bad.state == "FAILURE"
        returned = bad.get(timeout=10, propagate=False)
        assert isinstance(returned, RunFailed) and returned.result == failed.result
        import browserq

        assert browserq.RunFailed is RunFailed and "RunFailed" in browserq.__all__

        # needs_review: the worker dies while the side effect (no postcondition) is answered.
        demo.confirm_delay_ms = 5000
        review = run_template.delay("state_order", params={"base_url": demo.url, "password": DEMO_PASSWORD})
        wait_for(lambda: demo.submissions_with(review.id) == 1, 90, "the form post")
        (running,) = running_runs(store, [review.id], mid_run=False)
        os.kill(owner_pid(running["lease_owner"]), signal.SIGKILL)  # Celery redelivers to a new child
        demo.confirm_delay_ms = 0
        with pytest.raises(RunFailed) as raised:
            review.get(timeout=180)
        assert raised.value.status == "needs_review" and raised.value.code == "OUTCOME_UNKNOWN"
        assert store.runs.get_run(review.id).status == "needs_review" and review.state == "FAILURE"
        assert demo.submissions_with(review.id) == 1

    def flower_agrees() -> bool:
        failures, successes = flower.tasks("FAILURE"), flower.tasks("SUCCESS")
        return {bad.id, review.id} <= set(failures) and ok.id in successes and bad.id not in successes

    wait_for(flower_agrees, 60, "Flower to list the failed and needs_review runs as FAILURE")
    assert "RunFailed" in flower.tasks("FAILURE")[bad.id]["exception"]
    # Flower's metrics count what the runs did: one success (ok), two failures (bad, needs_review).
    metrics = flower.task_events("browserq.run_template")
    assert metrics.get("task-succeeded") == 1.0 and metrics.get("task-failed", 0.0) >= 2.0, metrics
    log = cluster.log("w1")
    bad_lines = [line for line in log.splitlines() if bad.id in line]
    assert any("raised expected" in line and "RunFailed" in line for line in bad_lines), bad_lines
    assert "raised unexpected" not in log, log[-4000:]
    for block in log.split("Traceback (most recent call last):")[1:]:  # only the SIGKILL's own
        assert "WorkerLostError" in block.split("\n[20")[0], block[:2000]
    assert not any("retry" in line.lower() for line in bad_lines), bad_lines


def test_cancelled_and_terminated_runs_end_revoked_and_cancelled(state_cluster: Cluster, flower: Flower, demo,
                                                                 pg_url: str, store: Store) -> None:
    cluster = state_cluster
    cluster.start_worker("w1", concurrency=2)
    from browserq import cancel_run, run_template

    with producer(cluster, pg_url):
        cancelled = run_template.delay("state_slow", params={"base_url": demo.url})
        terminated = run_template.delay("state_slow", params={"base_url": demo.url})
        wait_for(lambda: len(running_runs(store, [cancelled.id, terminated.id], mid_run=False)) == 2, 90,
                 "both runs to be running")
        wait_for(lambda: demo.hits("/slow") >= 2, 60, "both runs to wait on the slow page")
        assert cancel_run(cancelled.id, reason="no longer needed") in {"running", "cancelled"}
        flower.terminate(terminated.id)
        # The terminated run is recorded by its child as it stops or, if its lease ran out first,
        # when the sweeper's re-sent (still revoked) message reaches a worker: cancelled either way.
        final = wait_for(lambda: (f := {r.id: r for r in map(store.runs.get_run, (cancelled.id, terminated.id))
                                       if r.status in FINAL}) and len(f) == 2 and f, 120,
                         "both runs to end")
        assert (final[cancelled.id].status, final[cancelled.id].error_code) == ("cancelled", "CANCELLED")
        run = final[terminated.id]
        assert (run.status, run.error_code) == ("cancelled", "CANCELLED"), (run.status, run.error_code,
                                                                           run.error_message)
        assert "terminate" in run.error_message
        with pytest.raises(TaskRevokedError, match="no longer needed"):
            cancelled.get(timeout=120)
        with pytest.raises(TaskRevokedError):
            terminated.get(timeout=120)
        assert cancelled.state == "REVOKED" and terminated.state == "REVOKED"

    def flower_agrees() -> bool:
        revoked = flower.tasks("REVOKED")
        return {cancelled.id, terminated.id} <= set(revoked) and not (
            {cancelled.id, terminated.id} & set(flower.tasks("SUCCESS")))

    try:
        wait_for(flower_agrees, 60, "Flower to list both runs as REVOKED")
    except AssertionError:
        raise AssertionError(str({t: _get_json(f"{flower.url}/api/task/info/{t}") for t in (cancelled.id, terminated.id)})[:3000]) from None
