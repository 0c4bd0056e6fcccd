"""The progress publisher: one slot per task (coalesced), a thread of its own, throttled, and
nothing written once the task's execution ended — with a write in flight waited for.

The writes go to a real Redis result backend; a gate in front of it holds a write "in flight" so
the orderings that matter can be set up on purpose instead of hoped for.
"""

from __future__ import annotations

import threading
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from celery import Celery

from browserq.run_events import RunEnded, StepStarted
from browserq.tasks.progress import PROGRESS, ProgressPublisher, progress_meta, track_progress
from tests.support.polling import wait_until
from tests.support.redis import BROKER_DB, redis_url, wait_for_redis


class GatedBackend:
    """The real backend, with a gate each write waits at (open by default), and a log of writes."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Semaphore(0)
        self.writes: list[tuple[str, int]] = []

    def store_result(self, task_id: str, meta: dict[str, Any], state: str, request: Any = None) -> None:
        self.entered.release()
        assert self.gate.wait(60), "the test never opened the gate"
        self.backend.store_result(task_id, meta, state, request=request)
        self.writes.append((task_id, meta["step"]))


@pytest.fixture
def backend() -> Any:
    url = redis_url(BROKER_DB)
    wait_for_redis(url)
    app = Celery("progress-test", broker=url, backend=url, set_as_current=False)
    yield app.backend
    app.close()


def publisher_on(backend: Any, interval_ms: int = 0) -> tuple[ProgressPublisher, GatedBackend]:
    gated = GatedBackend(backend)
    app = SimpleNamespace(backend=gated, conf=SimpleNamespace(worker_send_task_events=False))
    return ProgressPublisher(app, interval_ms, end_wait_s=60), gated  # type: ignore[arg-type]


def step(run_id: str, n: int, of: int = 5) -> StepStarted:
    return StepStarted(run_id=run_id, step_path=str(n - 1), step=n, of=of, step_id=f"s{n}",
                       action="navigate", attempt=1, url=f"http://127.0.0.1/page/{n}")


def ids() -> tuple[str, str]:
    return uuid.uuid4().hex, str(uuid.uuid4())


def test_each_step_is_published_as_the_tasks_progress_state(backend) -> None:
    publisher, gated = publisher_on(backend)
    run_id, task_id = ids()
    binding = publisher.bind(run_id, task_id)
    publisher.step_started(step(run_id, 1))
    wait_until(lambda: gated.writes, 30, "the first progress write")
    meta = backend.get_task_meta(task_id)
    assert meta["status"] == PROGRESS
    assert meta["result"] == {"run_id": run_id, "status": "running", "step": 1, "of": 5, "step_path": "0",
                              "step_id": "s1", "action": "navigate", "url": "http://127.0.0.1/page/1",
                              "attempt": 1}
    publisher.release(binding)
    backend.forget(task_id)


def test_steps_that_come_while_a_write_is_in_flight_coalesce_into_the_latest(backend) -> None:
    publisher, gated = publisher_on(backend)
    run_id, task_id = ids()
    publisher.bind(run_id, task_id)
    gated.gate.clear()
    publisher.step_started(step(run_id, 1))
    assert gated.entered.acquire(timeout=30)  # step 1's write is in flight, held at the gate
    for n in (2, 3, 4):
        publisher.step_started(step(run_id, n))  # returns at once: the loop thread never waits
    gated.gate.set()
    wait_until(lambda: len(gated.writes) == 2, 30, "the in-flight write and the latest step")
    assert gated.writes == [(task_id, 1), (task_id, 4)]  # one write per step at most; 2 and 3 dropped
    assert backend.get_task_meta(task_id)["result"]["step"] == 4
    backend.forget(task_id)


def test_run_end_drops_the_pending_update_and_waits_for_the_one_in_flight(backend) -> None:
    publisher, gated = publisher_on(backend)
    run_id, task_id = ids()
    publisher.bind(run_id, task_id)
    gated.gate.clear()
    publisher.step_started(step(run_id, 1))
    assert gated.entered.acquire(timeout=30)
    publisher.step_started(step(run_id, 2))  # pending behind the write in flight
    ended = threading.Thread(target=publisher.run_ended, args=(RunEnded(run_id, "completed"),))
    ended.start()
    ended.join(0.5)
    assert ended.is_alive(), "run_ended returned while a progress write of the task was in flight"
    gated.gate.set()
    ended.join(30)
    assert not ended.is_alive()
    # The task's final state follows; nothing of the publisher may land after it.
    backend.mark_as_failure(task_id, RuntimeError("the run failed"))
    publisher.step_started(step(run_id, 3))  # a straggler from the loop thread: ignored
    assert gated.writes == [(task_id, 1)] and not publisher._slots
    assert backend.get_task_meta(task_id)["status"] == "FAILURE"
    backend.forget(task_id)


def test_the_interval_throttles_writes_per_task_and_the_end_drops_the_held_one(backend) -> None:
    publisher, gated = publisher_on(backend, interval_ms=600_000)
    run_id, task_id = ids()
    binding = publisher.bind(run_id, task_id)
    publisher.step_started(step(run_id, 1))
    wait_until(lambda: gated.writes, 30, "the first progress write")
    publisher.step_started(step(run_id, 2))  # within the interval: held in the task's slot
    other_run, other_task = ids()
    publisher.bind(other_run, other_task)
    publisher.step_started(step(other_run, 1))  # another task is not held back by this one's interval
    wait_until(lambda: len(gated.writes) == 2, 30, "the other task's first write")
    assert gated.writes == [(task_id, 1), (other_task, 1)]
    assert task_id in publisher._slots
    publisher.release(binding)
    assert task_id not in publisher._slots and backend.get_task_meta(task_id)["result"]["step"] == 1
    for t in (task_id, other_task):
        backend.forget(t)


def test_steps_of_runs_no_task_bound_are_not_published(backend) -> None:
    publisher, gated = publisher_on(backend)
    publisher.step_started(step(uuid.uuid4().hex, 1))
    assert publisher._thread is None and not gated.writes
    assert track_progress("r", SimpleNamespace(id=None)).publisher is None  # nothing to bind


def test_the_meta_says_where_the_run_is_and_nothing_it_read() -> None:
    meta = progress_meta(step("r1", 2))
    assert set(meta) == {"run_id", "status", "step", "of", "step_path", "step_id", "action", "url", "attempt"}


@pytest.mark.parametrize("final", ["task-revoked", "task-succeeded", "task-failed"])
def test_flower_shows_the_final_state_after_progress(final: str) -> None:
    """Celery's event state (what Flower shows) ranks unknown states above REVOKED; browserq ranks
    PROGRESS with STARTED, so a revoke after progress shows, and late progress never hides it."""
    from celery.events.state import Task as EventTask

    from browserq.tasks.progress import PROGRESS

    task = EventTask("t1")
    for n, kind in enumerate(["task-received", "task-started", "task-progress", final, "task-progress"]):
        task.event(kind.removeprefix("task-"), timestamp=float(n), local_received=float(n), fields={})
        if kind == "task-progress" and n == 2:
            assert task.state == PROGRESS
    assert task.state == {"task-revoked": "REVOKED", "task-succeeded": "SUCCESS", "task-failed": "FAILURE"}[final]
