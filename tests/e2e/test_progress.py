"""Live progress through a real worker (``--pool threads -c 2``: two runs in one process), Redis
as broker and result backend, PostgreSQL as the store, and a real Flower with basic auth.

While a run runs, ``AsyncResult`` shows ``PROGRESS`` with the step it is at (increasing, of the
right count, its own run id); when it ends the state is SUCCESS or FAILURE and stays so (no
PROGRESS write lands after it); Flower's API answers 401 without credentials and shows the task
in PROGRESS with its step. A template's ``queue:`` routes its runs there.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from browserq.errors import RunFailed
from tests.conftest import REPO, TEST_SECRET_KEY, producer_env
from tests.e2e.conftest import REDIS_URL
from tests.support.polling import poll, wait_until
from tests.support.processes import stop
from tests.support.progress_worker import STEPS_OF, ProgressWorker, progress_worker
from tests.support.workers import CELERY, spawn_logged

pytestmark = pytest.mark.slow

FLOWER_USER = "ops:flower-test-pass"
PROGRESS_KEYS = {"run_id", "status", "step", "of", "step_path", "step_id", "action", "url", "attempt"}


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[ProgressWorker]:
    with progress_worker(tmp_path_factory.mktemp("progress-e2e"), pg_url, REDIS_URL, result_backend=REDIS_URL,
                         pool="threads", concurrency=2, secret_key=TEST_SECRET_KEY) as w:
        yield w


@pytest.fixture
def producer(worker: ProgressWorker) -> Iterator[ProgressWorker]:
    """This test process sends runs and reads results like any producer of that worker."""
    with producer_env(worker.env):
        yield worker


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def flower(worker: ProgressWorker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Flower on the worker's broker and backend, basic auth from FLOWER_BASIC_AUTH."""
    port = free_port()
    log = tmp_path_factory.mktemp("flower") / "flower.log"
    env = {**worker.env, "FLOWER_BASIC_AUTH": FLOWER_USER}
    env.pop("FLOWER_UNAUTHENTICATED_API", None)
    proc = spawn_logged([*CELERY, "flower", f"--port={port}", "--address=127.0.0.1"], env, log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: proc.poll() is not None or http(f"{url}/healthcheck")[0] == 200, 60,
                   "Flower to answer")
        assert proc.poll() is None, log.read_text()[-3000:]
        yield url
    finally:
        stop(proc, 20)


def http(url: str, auth: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except OSError:
        return 0, ""


def watch(results: list[Any], backend: Any, timeout_s: float = 120) -> dict[str, list[dict[str, Any]]]:
    """Poll each task's state until every one is ready; the PROGRESS metas seen, per task."""
    seen: dict[str, list[dict[str, Any]]] = {r.id: [] for r in results}
    deadline = time.monotonic() + timeout_s
    while True:
        pending = 0
        for r in results:
            meta = backend.get_task_meta(r.id)
            if meta["status"] == "PROGRESS":
                seen[r.id].append(meta["result"])
            pending += meta["status"] not in ("SUCCESS", "FAILURE")
        if not pending:
            return seen
        assert time.monotonic() < deadline, f"the runs did not end within {timeout_s} s: {seen}"
        time.sleep(0.05)


def stays(result: Any, state: str, backend: Any) -> None:
    """The final state is not overwritten afterwards (watched a little while, as a poller would)."""
    for _ in range(10):
        assert backend.get_task_meta(result.id)["status"] == state
        assert result.state == state
        time.sleep(0.2)


def test_runs_publish_their_steps_as_progress_and_end_in_success_that_stays(producer, demo) -> None:
    from browserq import run_template
    from browserq.celery_app import app

    results = [run_template.delay("prog_steps", params={"base_url": demo.url}) for _ in range(2)]
    seen = watch(results, app.backend)
    for r in results:
        assert r.get(timeout=60)["status"] == "completed"
        assert r.state == "SUCCESS"
    for r in results:
        stays(r, "SUCCESS", app.backend)
    for r in results:
        metas = seen[r.id]
        steps = [m["step"] for m in metas]
        assert len(set(steps)) >= 2, f"{r.id}: too few steps seen while it ran: {steps}"
        assert steps == sorted(steps), f"{r.id}: steps went back: {steps}"
        for meta in metas:
            assert set(meta) == PROGRESS_KEYS, meta
            assert meta["run_id"] == r.id and meta["of"] == STEPS_OF and meta["status"] == "running", meta
            assert 1 <= meta["step"] <= STEPS_OF
            assert meta["action"] in ("navigate", "wait")
            assert meta["url"] in (None, "about:blank") or meta["url"].startswith(demo.url), meta  # the page's, before the step
        assert "base_url" not in json.dumps(metas)  # params never travel with the progress


def test_a_failed_run_ends_in_failure_not_in_progress(producer, demo) -> None:
    from browserq import run_template
    from browserq.celery_app import app

    result = run_template.delay("prog_fail", params={"base_url": demo.url})
    seen = watch([result], app.backend)
    with pytest.raises(RunFailed) as failed:
        result.get(timeout=60)
    assert failed.value.code == "ASSERTION_FAILED"
    stays(result, "FAILURE", app.backend)
    assert seen[result.id], "no PROGRESS was seen while the failing run ran"
    assert max(m["step"] for m in seen[result.id]) <= 3


def test_flower_needs_credentials_and_shows_progress(producer, flower, demo) -> None:
    from browserq import run_template

    assert http(f"{flower}/api/tasks")[0] == 401
    assert http(f"{flower}/api/tasks", auth="ops:wrong")[0] == 401
    result = run_template.delay("prog_steps", params={"base_url": demo.url})

    def info() -> dict[str, Any]:
        status, body = http(f"{flower}/api/task/info/{result.id}", auth=FLOWER_USER)
        return json.loads(body) if status == 200 else {}

    during = poll(info, lambda i: i.get("state") == "PROGRESS" or i.get("state") == "SUCCESS", 120, 0.1)
    assert during.get("state") == "PROGRESS", f"Flower never showed the task in PROGRESS: {during}"
    assert "'step':" in during["result"] and f"'of': {STEPS_OF}" in during["result"], during
    assert result.get(timeout=60)["status"] == "completed"
    done = wait_until(lambda: (i := info()).get("state") == "SUCCESS" and i, 60, "Flower to show SUCCESS")
    assert "'step':" not in done["result"], done


def test_a_template_queue_routes_its_runs_unless_the_caller_names_one(producer, demo) -> None:
    from browserq import run_template
    from browserq.celery_app import producer_services

    routed = run_template.delay("prog_routed", params={"base_url": demo.url})
    explicit = run_template.apply_async(args=["prog_routed"], kwargs={"params": {"base_url": demo.url}},
                                        queue=producer.queue)
    for result in (routed, explicit):
        assert result.get(timeout=120)["status"] == "completed"
    store = producer_services().store
    assert store.runs.get_run(routed.id).queue == producer.routed_queue
    assert routed.queue == producer.routed_queue  # the queue Celery delivered it from (result_extended)
    assert store.runs.get_run(explicit.id).queue == producer.queue and explicit.queue == producer.queue


def test_a_bad_queue_name_is_refused_before_anything_is_recorded(producer, demo) -> None:
    from browserq import ParamError, run_template
    from browserq.celery_app import producer_services

    before = len(producer_services().store.runs.list_runs(limit=1000, template="prog_routed"))
    with pytest.raises(ParamError, match=r"queue 'amq\.bad' must be"):
        run_template.apply_async(args=["prog_routed"], kwargs={"params": {"base_url": demo.url}}, queue="amq.bad")
    assert len(producer_services().store.runs.list_runs(limit=1000, template="prog_routed")) == before


def test_the_readme_example_reads_progress_from_async_result_info(producer, demo) -> None:
    code = (
        "import time\n"
        "from browserq import run_template\n"
        f"result = run_template.delay('prog_steps', params={{'base_url': '{demo.url}'}})\n"
        "seen = set()\n"
        "while not result.ready():\n"
        "    meta = result.backend.get_task_meta(result.id)\n"
        "    if meta['status'] == 'PROGRESS' and meta['result']['status'] == 'running':\n"
        "        seen.add(meta['result']['step'])\n"
        "    time.sleep(0.1)\n"
        "print(sorted(seen), result.state)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=producer.env, cwd=REPO,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    steps, state = done.stdout.strip().splitlines()[-1].rsplit(" ", 1)
    assert state == "SUCCESS" and len(json.loads(steps)) >= 2, done.stdout
