"""Crash a real worker process mid-run, then resume the run: checkpoints, side effects, leases.

The "worker" is a subprocess running ``Runtime.execute``; the test SIGKILLs it at a chosen moment
(read from the run's records), then executes the same run in this process, which takes the lease
over from the dead holder and resumes from the last checkpoint.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from browserq.execute.accept import prepare_loaded, record_run
from browserq.execute.errors import RunBusy
from browserq.execute.runtime import Runtime
from browserq.runner.checkpoint import parse_path
from browserq.store import Store
from tests.conftest import template
from tests.support.polling import wait_until
from tests.support.processes import kill_group
from tests.support.workers import browserq_env

pytestmark = pytest.mark.slow

PAGINATION = """
params:
  base_url: {type: url, required: true}
settings: {trace: off, step_timeout_s: 20}
steps:
  - {id: open, action: navigate, url: "${base_url}/quotes/"}
  - id: pages
    repeat:
      max: 5
      until_missing: "li.next a"
      steps:
        - {action: extract, selector: ".quote", fields: {text: ".text"}, into: quotes}
        - {action: click, selector: "li.next a", optional: true}
"""

ORDER = """
params:
  base_url: {type: url, required: true}
  password: {type: secret, required: true}
settings: {trace: off, step_timeout_s: 20}
steps:
  - {id: login, action: navigate, url: "${base_url}/login"}
  - {action: fill, selector: "#username", value: demo}
  - {action: fill, selector: "#password", value: "${password}"}
  - {action: click, selector: "button[type=submit]"}
  - {action: fill, selector: "#name", value: "Chaos"}
  - {action: fill, selector: "#message", value: "order ${run.id}"}
  - id: send
    action: click
    selector: "#send"
    side_effect: true
    %s
  - {id: done, action: get, what: url, into: final_url}
"""


def submit(runtime: Runtime, body: str, params: dict) -> str:
    prepared = prepare_loaded(template(body), params)
    record_run(runtime.store, prepared, secret_box=runtime.secret_box)
    return prepared.run_id


@pytest.fixture
def crashing_worker(pg_runtime: Runtime) -> Iterator[Callable[[str, Callable[[], bool]], None]]:
    """Start a worker process on a run and SIGKILL it as soon as ``when()`` is true (with a
    checkpoint after every new page unless ``interval_ms`` says otherwise)."""
    procs: list[subprocess.Popen] = []
    settings = pg_runtime.settings
    env = browserq_env({
        "BROWSERQ_DATABASE_URL": settings.database_url,
        "BROWSERQ_ARTIFACTS_DIR": str(settings.artifacts_dir),
        "BROWSERQ_SECRET_KEY": settings.secret_key or "",
        "BROWSERQ_LEASE_TTL_S": "30",
    })

    def run_and_kill(run_id: str, when: Callable[[], bool], interval_ms: str = "0") -> None:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("crashy_worker.py")), run_id],
            env={**env, "BROWSERQ_CHECKPOINT_INTERVAL_MS": interval_ms}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )
        procs.append(proc)

        def crash_point() -> bool:
            if when():
                return True
            if proc.poll() is not None:
                raise AssertionError(f"worker ended before the crash point: {proc.stderr.read().decode()[-2000:]}")
            return False

        wait_until(crash_point, 60, "the crash point", interval_s=0.02)
        kill_group(proc.pid)  # the worker and its Chromium, like an OOM kill
        proc.wait(10)

    yield run_and_kill
    for proc in procs:
        if proc.poll() is None:
            kill_group(proc.pid)


def succeeded(store: Store, run_id: str, path: str) -> bool:
    return any(s.step_path == path and s.status == "succeeded" for s in store.steps.steps(run_id))


def order_key(path: str) -> list[tuple[int, int]]:
    return [(i, p or 0) for i, p in parse_path(path.split("~")[0])]


def test_resume_from_checkpoint_skips_completed_steps(pg_runtime: Runtime, demo, crashing_worker) -> None:
    demo.latency_ms = 150
    run_id = submit(pg_runtime, PAGINATION, {"base_url": demo.url})
    store = pg_runtime.store
    crashing_worker(run_id, lambda: succeeded(store, run_id, "1[3].1"))  # on page 4 now
    assert store.runs.get_run(run_id).status == "running"  # the dead worker's lease is still there
    demo.latency_ms = 0
    outcome = pg_runtime.run_to_end(run_id)
    assert outcome.status == "completed", outcome
    texts = [q["text"] for q in outcome.outputs["quotes"]]
    assert len(texts) == 50 and len(set(texts)) == 50  # pages 1-3 from the checkpoint, 4-5 now
    assert demo.hits("/quotes/") == 1
    assert demo.hits("/quotes/page/2/") == 1 and demo.hits("/quotes/page/3/") == 1
    assert demo.hits("/quotes/page/4/") == 2  # loaded once, reopened by the resume
    steps = store.steps.steps(run_id)
    resume = [s for s in steps if s.action == "resume"]
    assert len(resume) == 1 and resume[0].inputs["checkpoint"] == "1[3].1"
    second = [s for s in steps if s.run_attempt == 2 and s.action != "resume"]
    assert second and all(order_key(s.step_path) > order_key("1[3].1") for s in second)
    history = [(t.from_status, t.to_status) for t in store.transitions.transitions(run_id)]
    assert history[-2:] == [("running", "running"), ("running", "completed")]
    assert store.runs.get_run(run_id).takeovers == 1


def test_unknown_side_effect_with_postcondition_is_recovered_not_repeated(
    pg_runtime: Runtime, demo, crashing_worker
) -> None:
    postcondition = 'postcondition: {url: "${base_url}/account/tickets?ref=${run.id}", selector: "#ticket-found"}'
    run_id = submit(pg_runtime, ORDER % postcondition, {"base_url": demo.url, "password": "s3cret-pass"})
    demo.confirm_delay_ms = 5000  # the form is received; its answer never reaches the dead worker
    crashing_worker(run_id, lambda: demo.submissions_with(run_id) == 1)
    demo.confirm_delay_ms = 0
    outcome = pg_runtime.run_to_end(run_id)
    assert outcome.status == "completed", outcome
    assert demo.submissions_with(run_id) == 1  # never re-executed blindly
    send = [s for s in pg_runtime.store.steps.steps(run_id) if s.step_path == "6"]
    assert [s.status for s in send] == ["unknown", "succeeded"]
    assert send[1].output["recovered"] is True


def test_with_a_long_checkpoint_interval_a_side_effect_is_still_probed_not_repeated(
    pg_runtime: Runtime, demo, crashing_worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No automatic checkpoint before the side effect: the resumed run starts over, redoes the
    read-only steps (login, fills) and probes the send instead of sending again."""
    monkeypatch.setattr(pg_runtime.runner.settings, "checkpoint_interval_ms", 3_600_000)
    postcondition = 'postcondition: {url: "${base_url}/account/tickets?ref=${run.id}", selector: "#ticket-found"}'
    run_id = submit(pg_runtime, ORDER % postcondition, {"base_url": demo.url, "password": "s3cret-pass"})
    demo.confirm_delay_ms = 5000
    crashing_worker(run_id, lambda: demo.submissions_with(run_id) == 1, interval_ms="3600000")
    demo.confirm_delay_ms = 0
    assert pg_runtime.store.runs.get_run(run_id).checkpoint is None  # four new pages, none checkpointed
    outcome = pg_runtime.run_to_end(run_id)
    assert outcome.status == "completed", outcome
    assert demo.submissions_with(run_id) == 1  # never re-executed blindly
    steps = pg_runtime.store.steps.steps(run_id)
    assert not [s for s in steps if s.action == "resume"]  # nothing to resume from: started over
    assert [s.status for s in steps if s.step_path == "6"] == ["unknown", "succeeded"]
    assert pg_runtime.store.runs.get_run(run_id).checkpoint["path"] == "6"  # the side effect's own


def test_unknown_side_effect_without_postcondition_needs_review(pg_runtime: Runtime, demo, crashing_worker) -> None:
    run_id = submit(pg_runtime, ORDER % "", {"base_url": demo.url, "password": "s3cret-pass"})
    demo.confirm_delay_ms = 5000
    crashing_worker(run_id, lambda: demo.submissions_with(run_id) == 1)
    demo.confirm_delay_ms = 0
    outcome = pg_runtime.run_to_end(run_id)
    assert outcome.status == "needs_review" and outcome.error_code == "OUTCOME_UNKNOWN"
    assert "may or may not have happened" in outcome.error_message
    assert demo.submissions_with(run_id) == 1
    run = pg_runtime.store.runs.get_run(run_id)
    assert run.status == "needs_review" and run.finished_at is not None


def test_side_effect_retried_only_when_the_template_allows(pg_runtime: Runtime, demo, crashing_worker) -> None:
    body = ORDER % 'on_unknown: retry\n    postcondition: {url: "${base_url}/account/tickets?ref=nothing", selector: "#ticket-found"}'
    run_id = submit(pg_runtime, body, {"base_url": demo.url, "password": "s3cret-pass"})
    demo.confirm_delay_ms = 5000
    crashing_worker(run_id, lambda: demo.submissions_with(run_id) == 1)
    demo.confirm_delay_ms = 0
    outcome = pg_runtime.run_to_end(run_id)
    assert outcome.status == "completed"
    assert demo.submissions_with(run_id) == 2  # the template said it is safe to repeat


def test_a_live_lease_blocks_a_duplicate_execution(pg_runtime: Runtime, demo) -> None:
    run_id = submit(pg_runtime, PAGINATION, {"base_url": demo.url})
    lease = pg_runtime.store.leases.acquire_lease(run_id, owner="elsewhere:1:1", ttl_s=30)
    with pytest.raises(RunBusy) as busy:
        pg_runtime.execute(run_id)
    assert busy.value.holder == "elsewhere:1:1" and 20 < busy.value.retry_in_s <= 32
    assert demo.hits("/quotes/") == 0  # nothing ran
    pg_runtime.store.leases.release_lease(run_id, token=lease.token)


def test_poison_run_fails_after_repeated_worker_losses(pg_runtime: Runtime, demo) -> None:
    run_id = submit(pg_runtime, PAGINATION, {"base_url": demo.url})
    store = pg_runtime.store
    for n in range(pg_runtime.settings.max_worker_losses + 1):
        store.leases.acquire_lease(run_id, owner=f"ghost{n}:999999:1", ttl_s=0.01)  # a worker that died
        time.sleep(0.05)
    outcome = pg_runtime.run_to_end(run_id)
    assert outcome.status == "failed" and outcome.error_code == "WORKER_LOST_REPEATEDLY"
    assert demo.hits("/quotes/") == 0


def test_cancel_a_running_run(pg_runtime: Runtime, demo) -> None:
    demo.latency_ms = 300
    run_id = submit(pg_runtime, PAGINATION, {"base_url": demo.url})
    settings = pg_runtime.settings.model_copy(update={"lease_ttl_s": 1.5})
    runtime = Runtime(settings).start()
    try:
        result: dict = {}
        worker = threading.Thread(target=lambda: result.update(out=runtime.run_to_end(run_id)))
        worker.start()
        while not succeeded(runtime.store, run_id, "0"):
            time.sleep(0.05)
        assert runtime.store.cancellation.request_cancel(run_id, reason="operator said stop").status == "running"
        worker.join(30)
        outcome = result["out"]
        assert outcome.status == "cancelled" and "operator said stop" in outcome.error_message
        assert runtime.store.runs.get_run(run_id).status == "cancelled"
        assert runtime.pool.open_contexts == 0
        assert demo.hits("/quotes/page/5/") == 0
    finally:
        runtime.stop()


def test_browser_killed_mid_run_is_relaunched_and_the_run_resumes(pg_runtime: Runtime, demo) -> None:
    demo.latency_ms = 200
    run_id = submit(pg_runtime, PAGINATION, {"base_url": demo.url})
    launches = pg_runtime.pool.launches
    store = pg_runtime.store

    def kill_browser_on_page_3() -> None:
        while not succeeded(store, run_id, "1[2].1"):
            time.sleep(0.02)
        os.kill(pg_runtime.pool.pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_browser_on_page_3)
    killer.start()
    outcome = pg_runtime.run_to_end(run_id)
    killer.join()
    assert outcome.status == "completed", outcome
    assert len(outcome.outputs["quotes"]) == 50
    assert pg_runtime.pool.launches == launches + 1
    assert demo.hits("/quotes/page/2/") == 1  # before the checkpoint: not re-executed
    reasons = [t.reason for t in store.transitions.transitions(run_id) if t.to_status == "retrying"]
    assert len(reasons) == 1 and "browser lost" in reasons[0]
    assert [s.action for s in store.steps.steps(run_id)].count("resume") == 1


def test_run_level_retry_with_backoff(pg_runtime: Runtime, demo) -> None:
    body = """
    settings: {timeout_s: 1, run_retries: 1, trace: off}
    steps:
      - {action: navigate, url: "%s/slow?ms=5000"}
    """ % demo.url
    settings = pg_runtime.settings.model_copy(update={"run_retry_backoff_s": 0.1})
    runtime = Runtime(settings).start()
    try:
        prepared = prepare_loaded(template(body), {})
        record_run(runtime.store, prepared, secret_box=None)
        outcome = runtime.run_to_end(prepared.run_id)
        assert outcome.status == "failed" and outcome.error_code == "RUN_TIMEOUT"
        statuses = [t.to_status for t in runtime.store.transitions.transitions(prepared.run_id)]
        assert statuses == ["queued", "running", "retrying", "running", "failed"]
        assert runtime.store.runs.get_run(prepared.run_id).attempt == 2
    finally:
        runtime.stop()
