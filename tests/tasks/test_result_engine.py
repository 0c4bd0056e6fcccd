"""The database result backend of a thread that runs tasks keeps one pooled engine: a stored state
costs no new PostgreSQL connection (and no new SQLAlchemy engine, whose caches a worker child kept:
bench/README.md § soak_memory.py). Celery pools only once told of a fork, which billiard's prefork
children never tell it (celery#3032); ``pooled_result_engine`` does, in the task's thread and in
the progress writer's.

Counted where SQLAlchemy makes them (every pool's ``connect`` event), side by side with a thread of
the same process whose backend was left as Celery makes it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from celery import Celery
from sqlalchemy import event
from sqlalchemy.pool import Pool

from browserq.settings import load_settings
from browserq.tasks.app import celery_config, pooled_result_engine
from tests.support.postgres import scratch_database

STATES = 8


@contextmanager
def connections_made_by(thread_ids: set[int]) -> Iterator[list[int]]:
    """New database connections made by those threads meanwhile (any engine, any pool)."""
    made: list[int] = []

    def connected(*_: Any) -> None:
        if threading.get_ident() in thread_ids:
            made.append(threading.get_ident())

    event.listen(Pool, "connect", connected)
    try:
        yield made
    finally:
        event.remove(Pool, "connect", connected)


def connections_for_states(app: Celery, *, pooled: bool) -> int:
    """In a thread of its own (Celery gives each thread its own backend): store one state (the
    table is made, the engine warmed), then count the connections ``STATES`` more states make."""
    counted: list[int] = []
    failure: list[BaseException] = []
    ids: set[int] = set()

    def work() -> None:
        ids.add(threading.get_ident())
        try:
            if pooled:
                pooled_result_engine(app)
            backend = app.backend
            backend.store_result(f"warm-{uuid.uuid4()}", {"warm": True}, "SUCCESS")
            with connections_made_by(ids) as made:
                for i in range(STATES):
                    backend.store_result(f"state-{uuid.uuid4()}", {"i": i}, "SUCCESS")
            counted.append(len(made))
            backend.session_manager.invalidate(backend.url)
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(120)
    if failure:
        raise failure[0]
    return counted[0]


def test_a_task_thread_stores_its_states_through_one_pooled_connection() -> None:
    with scratch_database("results") as url:
        settings = load_settings(broker_url="memory://", result_backend=f"db+{url}", database_url=url)
        app = Celery("result-engine-test", set_as_current=False)
        app.conf.update(celery_config(settings))
        as_celery_makes_it = connections_for_states(app, pooled=False)
        pooled = connections_for_states(app, pooled=True)
    assert as_celery_makes_it == STATES, "the control: as Celery makes it, every state connects anew"
    assert pooled == 0, f"{pooled} new connections for {STATES} stored states through the pooled engine"
