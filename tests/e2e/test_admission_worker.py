"""The worker's door (a message sent without browserq's producer: ``send_task``, another language)
admits a run as every other door does (browserq/execute/admission.py), under the worker's own
limits: it once dropped BROWSERQ_MAX_PARAMS_BYTES and held such messages to the default instead."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from browserq.errors import RunFailed
from tests.conftest import producer_env
from tests.e2e.conftest import REDIS_URL, WorkerEnv, celery_worker, worker_env


@pytest.fixture(scope="module")
def small_limits(tmp_path_factory: pytest.TempPathFactory, pg_url: str, e2e_templates: Path) -> Iterator[WorkerEnv]:
    config = worker_env(tmp_path_factory.mktemp("admission-worker"), pg_url, REDIS_URL, e2e_templates)
    config = replace(config, env={**config.env, "BROWSERQ_MAX_PARAMS_BYTES": "2000"})
    with producer_env(config.env), celery_worker(config, concurrency=1):
        yield config


def test_a_message_sent_without_the_producer_meets_the_workers_params_limit(small_limits: WorkerEnv) -> None:
    from browserq.celery_app import TASK_NAME, app

    params = {"start_url": "http://127.0.0.1:9/?q=" + "x" * 3000, "max_pages": 1}  # ~3 KB, under the default
    sent = app.send_task(TASK_NAME, args=["quotes"], kwargs={"params": params}, queue=small_limits.queue)
    with pytest.raises(RunFailed) as failed:
        sent.get(timeout=90)
    error = failed.value.result["error"]
    assert error["code"] == "PARAM_INVALID", error
    assert "BROWSERQ_MAX_PARAMS_BYTES" in error["message"] and "2,000" in error["message"], error
