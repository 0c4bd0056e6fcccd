"""A failed run's final task state, through a real worker (prefork, Redis broker), with the result
backend on Redis and on the database: the FAILURE meta holds the RunFailed result dict and no
traceback (a failed run is an expected outcome), and the ``task-failed`` event Flower builds its
view from replaces the last PROGRESS dict under Result (``status: failed``, not ``running``).
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from browserq.errors import RunFailed
from tests.conftest import TEST_SECRET_KEY, producer_env
from tests.e2e.conftest import REDIS_URL
from tests.support.polling import wait_until
from tests.support.progress_worker import ProgressWorker, progress_worker

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["redis", "database"])
def worker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, pg_url: str
) -> Iterator[ProgressWorker]:
    backend = REDIS_URL if request.param == "redis" else None  # None: db+ the store's database
    with progress_worker(
        tmp_path_factory.mktemp(f"failed-{request.param}"),
        pg_url,
        REDIS_URL,
        result_backend=backend,
        secret_key=TEST_SECRET_KEY,
    ) as w:
        yield w


@contextmanager
def flower_view(app: Any) -> Iterator[Any]:
    """Celery's event state fed from the broker, as Flower keeps it (Flower shows nothing else)."""
    state = app.events.State()
    connection = app.connection_for_read()
    receiver = app.events.Receiver(connection, handlers={"*": state.event})
    thread = threading.Thread(
        target=receiver.capture, kwargs={"limit": None, "timeout": None}, daemon=True
    )
    thread.start()
    try:
        wait_until(lambda: state.event_count > 0, 30, "the first event (a worker heartbeat)")
        yield state
    finally:
        receiver.should_stop = True  # looked at every second
        thread.join(10)
        connection.release()


def test_a_failed_runs_final_state_is_its_result_dict_without_a_traceback(
    worker: ProgressWorker, demo
) -> None:
    from browserq import run_template
    from browserq.celery_app import app

    with producer_env(worker.env), flower_view(app) as flower:
        result = run_template.delay("prog_fail", params={"base_url": demo.url})
        wait_until(
            lambda: result.id in flower.tasks and flower.tasks[result.id].state == "PROGRESS",
            60,
            "Flower's view to show the run in PROGRESS",
        )
        assert "'status': 'running'" in flower.tasks[result.id].result
        with pytest.raises(RunFailed) as failed:
            result.get(timeout=60)
        expected = failed.value.result
        assert expected["status"] == "failed" and expected["error"]["code"] == "ASSERTION_FAILED"
        assert expected["run_id"] == result.id
        # the result backend's row: FAILURE, the RunFailed with the dict, no traceback
        meta = app.backend.get_task_meta(result.id)
        assert meta["status"] == "FAILURE" and meta["traceback"] is None, meta
        assert isinstance(meta["result"], RunFailed) and meta["result"].result == expected
        assert result.traceback is None
        # Flower's view: FAILURE, and Result is the final dict, not the last progress
        task = wait_until(
            lambda: flower.tasks[result.id] if flower.tasks[result.id].state == "FAILURE" else None,
            30,
            "Flower's view to show FAILURE",
        )
        assert task.traceback is None, task.traceback
        assert ast.literal_eval(task.result) == expected, task.result
        assert "RunFailed" in task.exception
