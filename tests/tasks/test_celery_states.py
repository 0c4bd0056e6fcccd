"""``browserq.RunFailed`` through Celery's JSON result serialization, on a real Redis backend."""

from __future__ import annotations

import uuid

import pytest
from celery import Celery

import browserq
from browserq.errors import BrowserqError, RunFailed

REDIS_URL = "redis://127.0.0.1:6379/0"
RESULT = {
    "run_id": "0123456789abcdef0123456789abcdef",
    "status": "needs_review",
    "outputs": {"quotes": [{"text": "“a” & <b>"}], "n": 3},
    "error": {"code": "OUTCOME_UNKNOWN", "message": "step send may or may not have happened", "step": "5[2].1"},
}


def test_runfailed_is_public_and_in_the_error_tree() -> None:
    assert browserq.RunFailed is RunFailed and "RunFailed" in browserq.__all__
    assert issubclass(RunFailed, BrowserqError)
    assert "RunFailed" in (browserq.errors.__doc__ or "")
    failed = RunFailed(RESULT)
    assert (failed.run_id, failed.status, failed.code, failed.step) == (
        RESULT["run_id"], "needs_review", "OUTCOME_UNKNOWN", "5[2].1")
    assert failed.outputs == RESULT["outputs"] and "may or may not" in str(failed)


def test_runfailed_survives_celerys_json_exception_serialization() -> None:
    app = Celery("t", broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
    app.conf.update(result_serializer="json", accept_content=["json"])
    task_id = str(uuid.uuid4())
    try:
        app.backend.mark_as_failure(task_id, RunFailed(RESULT))
        stored = app.backend.get(app.backend.get_key_for_task(task_id))
        assert b'"exc_module": "browserq.errors"' in stored and b'"exc_type": "RunFailed"' in stored
        handle = app.AsyncResult(task_id)
        assert handle.state == "FAILURE"
        with pytest.raises(RunFailed) as raised:
            handle.get(timeout=5)
        assert raised.value.result == RESULT
        returned = handle.get(timeout=5, propagate=False)
        assert isinstance(returned, RunFailed) and returned.result == RESULT
    finally:
        app.backend.forget(task_id)
