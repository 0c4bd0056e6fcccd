"""``run_template.delay()`` accepts a run in the caller's process, once, before anything is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from browserq import cancel_run, run_template
from browserq.errors import BrokerUnavailable, ParamError
from browserq.execute.accept import prepare_loaded
from browserq.submit import idempotency_key_for
from tests.conftest import producer_env, template
from tests.submit.conftest import Producer, producer_settings

START = {"start_url": "http://127.0.0.1:8000/quotes/"}


def test_a_run_is_recorded_then_sent_with_its_id_and_time_limits(producer: Producer) -> None:
    handle = run_template.apply_async(args=["quotes@1.2"], kwargs={"params": START}, queue=producer.queue)
    run = producer.store.runs.get_run(handle.id)
    assert run is not None and run.status == "queued" and run.enqueued_at is not None
    assert (run.task_id, run.queue, run.timeout_s) == (handle.id, producer.queue, 120)
    (message,) = producer.messages()
    assert message["task"] == "browserq.run_template" and message["id"] == handle.id
    assert message["args"] == ["quotes@1.2.0"] and message["kwargs"] == {"run_id": handle.id}
    assert message["timelimit"] == [120 + 30 + 30, 120 + 30]  # [hard, soft]: timeout_s + margin (+ grace)
    assert "start_url" in message["kwargsrepr"]


def test_an_idempotency_key_joins_the_first_run(producer: Producer) -> None:
    first = run_template.apply_async(args=["quotes"], kwargs={"params": START, "idempotency_key": "order-42"},
                                     queue=producer.queue)
    again = run_template.apply_async(args=["quotes"], kwargs={"params": {**START, "max_pages": 2},
                                                              "idempotency_key": "order-42"}, queue=producer.queue)
    assert again.id == first.id and len(producer.messages()) == 1


def test_bad_input_is_refused_before_anything_is_recorded_or_sent(producer: Producer) -> None:
    with pytest.raises(ParamError, match="max_pages"):
        run_template.apply_async(args=["quotes"], kwargs={"params": {**START, "max_pages": 99}}, queue=producer.queue)
    with pytest.raises(ParamError, match="limit is 150"):
        run_template.apply_async(args=["quotes"], kwargs={"params": START, "idempotency_key": "k" * 151},
                                 queue=producer.queue)
    with pytest.raises(TypeError, match="unexpected arguments: priority_class"):
        run_template.apply_async(args=["quotes"], kwargs={"params": START, "priority_class": 1}, queue=producer.queue)
    assert producer.store.runs.list_runs() == [] and producer.messages() == []


def test_a_broker_that_is_down_leaves_no_run_behind(tmp_path: Path) -> None:
    env = producer_settings(tmp_path, BROWSERQ_BROKER_URL="redis://:hunter2@127.0.0.1:1/0")
    with producer_env(env):
        with pytest.raises(BrokerUnavailable) as raised:
            run_template.delay("quotes", params=START)
        from browserq.submit import producer_services

        assert producer_services().store.runs.list_runs() == []
    assert "redis://:***@127.0.0.1:1/0" in str(raised.value) and "hunter2" not in str(raised.value)


def test_cancel_run_cancels_a_queued_run(producer: Producer) -> None:
    handle = run_template.apply_async(args=["quotes"], kwargs={"params": START}, queue=producer.queue)
    assert cancel_run(handle.id, reason="changed my mind") == "cancelled"
    assert "changed my mind" in producer.store.runs.get_run(handle.id).status_reason


def test_the_idempotency_key_is_the_callers_or_the_templates() -> None:
    derived = template("""
        params: {order_id: {type: int, required: true}}
        settings: {idempotency_key: "order-${order_id}"}
        steps: [{action: navigate, url: "https://example.com/"}]
    """)
    prepared = prepare_loaded(derived, {"order_id": 7})
    key = idempotency_key_for(prepared, None)
    assert key is not None and key.startswith(f"{derived.name}:") and len(key) == len(derived.name) + 41
    assert key == idempotency_key_for(prepare_loaded(derived, {"order_id": 7}), None)
    assert key != idempotency_key_for(prepare_loaded(derived, {"order_id": 8}), None)
    assert idempotency_key_for(prepared, "mine") == "mine"
    plain = template("steps: [{action: navigate, url: 'https://example.com/'}]\n")
    assert idempotency_key_for(prepare_loaded(plain, {}), None) is None
