"""``run_batch``: every item validated before anything is recorded or sent; one group of messages."""

from __future__ import annotations

import pytest

from browserq import batch_summary, run_batch
from browserq.errors import BrowserqError, ParamError
from tests.submit.conftest import Producer

START = {"start_url": "http://127.0.0.1:8000/quotes/"}


def test_one_bad_item_sends_nothing(producer: Producer) -> None:
    with pytest.raises(ParamError) as raised:
        run_batch("quotes", [START, {**START, "max_pages": 0}, {}], queue=producer.queue)
    assert [p.split(":")[0] for p in raised.value.problems] == ["item 1", "item 2"]
    assert producer.store.runs.list_runs() == [] and producer.messages() == []
    with pytest.raises(BrowserqError, match="between 0 and 1"):
        run_batch("quotes", [START], max_failure_rate=1.5, queue=producer.queue)


def test_a_batch_is_recorded_and_sent_as_a_group(producer: Producer) -> None:
    handle = run_batch("quotes", [START, {**START, "max_pages": 2}], max_failure_rate=0.5, queue=producer.queue)
    messages = producer.messages()
    assert [m["id"] for m in messages] == handle.run_ids
    assert all(m["kwargs"] == {"run_id": m["id"]} and m["timelimit"] == [180, 150] for m in messages)
    summary = batch_summary(handle.batch_id)
    assert (summary.total, summary.queued) == (2, 2)
    assert summary.breaker == {"min_runs": 2, "max_failure_rate": 0.5}
    assert {producer.store.runs.get_run(r).batch_id for r in handle.run_ids} == {handle.batch_id}
