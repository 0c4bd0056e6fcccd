"""The run task's producer side: recorded runs go straight out, others only through the producer."""

from __future__ import annotations

import pytest

import browserq.celery_app  # noqa: F401  (installs the producer's admission, as every caller does)
from browserq.errors import ConfigError
from browserq.tasks import run_task
from browserq.tasks.run_task import run_template
from tests.submit.conftest import Producer, producer  # noqa: F401  (the fixture)


def test_a_recorded_run_is_sent_as_it_is(producer: Producer) -> None:  # noqa: F811
    run_id = "f" * 32
    handle = run_template.apply_async(args=["quotes"], kwargs={"run_id": run_id}, task_id=run_id, queue=producer.queue)
    (message,) = producer.messages()
    assert handle.id == run_id and message["kwargs"] == {"run_id": run_id} and message["args"] == ["quotes"]
    assert producer.store.runs.get_run(run_id) is None  # nothing validated or recorded: it already was


def test_without_the_producer_a_call_with_params_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_task, "_admission", None)
    with pytest.raises(ConfigError, match=r"import browserq\.celery_app"):
        run_template.delay("quotes", params={})
