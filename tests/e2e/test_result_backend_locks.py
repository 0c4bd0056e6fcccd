"""A result backend that cannot take a task's STARTED state does not fail the run.

What CI met (tests/chaos/test_clock_skew.py): a worker frozen by SIGSTOP inside a progress write
holds its task's ``celery_taskmeta`` row lock until PostgreSQL ends the session (30 s idle in
transaction). The worker that takes the run over wrote STARTED from Celery's tracer, before the
task: the write waited ``lock_timeout`` four times, Celery logged "raised unexpected:
BackendStoreError" with a traceback, and the task failed without running. Now STARTED goes out
with the run's progress, and a backend that refuses it costs a warning.

Here the lock is held on purpose: the whole table, in this process, until the run has ended in
the store.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.e2e.conftest import WorkerEnv
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow


def test_a_locked_result_row_delays_the_tasks_state_not_its_run(
    redis_config: WorkerEnv, redis_worker, site, pg_url: str
) -> None:
    from browserq.celery_app import app, run_template
    from browserq.store import Store

    app.backend.ResultSession().close()  # the backend's tables exist before this test locks one
    store, engine = Store(pg_url), sa.create_engine(pg_url)
    log_before = redis_config.log.read_text(errors="replace")
    try:
        with engine.connect() as holder:
            holder.execute(sa.text("LOCK TABLE celery_taskmeta IN EXCLUSIVE MODE"))  # no insert, no FOR UPDATE
            result = run_template.delay("quotes@1.2", params={"start_url": f"{site.url}/quotes/", "max_pages": 1})
            status = wait_until(lambda: (run := store.runs.get_run(result.id)) and run.status in
                                ("completed", "failed") and run.status, 60, "the run to end while the row is locked")
            holder.rollback()  # the lock goes: the task's states can be written again
        assert status == "completed"
        assert result.get(timeout=60)["status"] == "completed"
        assert result.state == "SUCCESS"
    finally:
        engine.dispose()
        store.dispose()
    written = redis_config.log.read_text(errors="replace")[len(log_before):]
    assert "raised unexpected" not in written and "Traceback" not in written, written[-3000:]
