"""When the runner takes a checkpoint: automatic ones at most once per
BROWSERQ_CHECKPOINT_INTERVAL_MS, side effects and ``checkpoint: true`` always, and an automatic
one that would hold what the previous one held is not written. Counted through the run's stored
checkpoint (its ``seq`` counts the checkpoints the attempt wrote), never timed."""

from __future__ import annotations

import time
from typing import Any

import pytest

from browserq.execute.runtime import Runtime
from tests.conftest import template

#: Five steps that land on a new page (navigate + 3 clicks + navigate), one explicit checkpoint.
PAGES = """
params:
  base_url: {type: url, required: true}
settings: {trace: off}
steps:
  - {id: open, action: navigate, url: "${base_url}/quotes/"}
  - id: pages
    repeat:
      max: 3
      steps:
        - {action: click, selector: "li.next a"}
  - {id: mark, action: get, what: url, into: here, checkpoint: true}
  - {id: last, action: navigate, url: "${base_url}/quotes/page/5/"}
"""

#: Login (new pages), the contact form, a side effect, one more new page after it.
ORDER = """
params:
  base_url: {type: url, required: true}
settings: {trace: off}
steps:
  - {action: navigate, url: "${base_url}/login"}
  - {action: fill, selector: "#username", value: demo}
  - {action: fill, selector: "#password", value: "s3cret-pass"}
  - {action: click, selector: "button[type=submit]"}
  - {action: fill, selector: "#name", value: "Interval"}
  - {action: fill, selector: "#message", value: "order ${run.id}"}
  - {id: send, action: click, selector: "#send", side_effect: true}
  - {action: navigate, url: "${base_url}/quotes/"}
"""


@pytest.fixture
def interval(sqlite_runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Set BROWSERQ_CHECKPOINT_INTERVAL_MS of the runtime's runner for one test."""

    def set_to(ms: int) -> None:
        monkeypatch.setattr(sqlite_runtime.runner.settings, "checkpoint_interval_ms", ms)

    return set_to


def _checkpoint(runtime: Runtime, body: str, url: str) -> dict[str, Any] | None:
    outcome = runtime.run_loaded(template(body), {"base_url": url})
    assert outcome.status == "completed", outcome
    run = runtime.store.runs.get_run(outcome.run_id)
    assert run is not None
    return run.checkpoint


def test_interval_zero_checkpoints_after_every_new_page(sqlite_runtime: Runtime, demo, interval) -> None:
    interval(0)
    checkpoint = _checkpoint(sqlite_runtime, PAGES, demo.url)
    assert checkpoint is not None and (checkpoint["seq"], checkpoint["path"]) == (6, "3")


def test_a_long_interval_keeps_only_the_asked_for_checkpoints(sqlite_runtime: Runtime, demo, interval) -> None:
    interval(3_600_000)
    checkpoint = _checkpoint(sqlite_runtime, PAGES, demo.url)
    assert checkpoint is not None and (checkpoint["seq"], checkpoint["path"]) == (1, "2")  # `mark` only


def test_a_side_effect_is_checkpointed_whatever_the_interval(sqlite_runtime: Runtime, demo, interval) -> None:
    interval(3_600_000)
    before = len(demo.submissions_snapshot())
    checkpoint = _checkpoint(sqlite_runtime, ORDER, demo.url)
    assert checkpoint is not None and (checkpoint["seq"], checkpoint["path"]) == (1, "6")  # `send` only
    interval(0)
    checkpoint = _checkpoint(sqlite_runtime, ORDER, demo.url)
    # login page, account page (after the login click), send, quotes: as before the interval
    assert checkpoint is not None and (checkpoint["seq"], checkpoint["path"]) == (4, "7")
    assert len(demo.submissions_snapshot()) == before + 2  # each run sent once


def test_an_automatic_checkpoint_that_changes_nothing_is_not_written(
    sqlite_runtime: Runtime, demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Back on the page of the last checkpoint with nothing new: only the path would differ."""
    runner = sqlite_runtime.runner
    due = runner.checkpointer.due
    monkeypatch.setattr(runner.checkpointer, "due",
                        lambda reason, state: due(reason, state) and state.checkpoint_seq != 1)
    monkeypatch.setattr(runner.settings, "checkpoint_interval_ms", 0)
    body = """
    params:
      base_url: {type: url, required: true}
    settings: {trace: off}
    steps:
      - {action: navigate, url: "${base_url}/quotes/"}
      - {action: navigate, url: "${base_url}/quotes/page/2/"}
      - {action: navigate, url: "${base_url}/quotes/"}
    """
    # step 1 is not due (the patch); step 2 is, but holds exactly what checkpoint 1 held
    checkpoint = _checkpoint(sqlite_runtime, body, demo.url)
    assert checkpoint is not None and (checkpoint["seq"], checkpoint["path"]) == (1, "0")


def test_an_automatic_checkpoint_waits_for_the_interval(sqlite_runtime: Runtime) -> None:
    """The interval counts from the last checkpoint (of any kind); asked-for ones never wait."""

    class State:
        last_checkpoint_at = time.monotonic()

    runner = sqlite_runtime.runner
    settings = runner.settings
    original = settings.checkpoint_interval_ms
    try:
        settings.checkpoint_interval_ms = 5000
        assert not runner.checkpointer.due("auto", State)
        assert runner.checkpointer.due("asked", State)
        assert not runner.checkpointer.due(None, State)
        State.last_checkpoint_at -= 5.0
        assert runner.checkpointer.due("auto", State)
        settings.checkpoint_interval_ms = 0
        State.last_checkpoint_at = time.monotonic() + 1.0  # even "just now"
        assert runner.checkpointer.due("auto", State)
    finally:
        settings.checkpoint_interval_ms = original


def test_an_identity_storage_is_written_at_a_checkpoint_only_when_it_changed(
    sqlite_runtime: Runtime, demo, interval, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three checkpoints on pages that set nothing: the identity's storage is stored once then
    (plus once at the run's end, as before), not at every checkpoint."""
    interval(0)
    runner = sqlite_runtime.runner
    stored: list[dict[str, Any]] = []
    keep = runner.context.store_identity_storage

    async def counted(state: Any, storage: dict[str, Any]) -> None:
        stored.append(storage)
        await keep(state, storage)

    monkeypatch.setattr(runner.context, "store_identity_storage", counted)
    body = """
    params:
      base_url: {type: url, required: true}
    settings: {trace: off}
    steps:
      - {action: navigate, url: "${base_url}/quotes/"}
      - {action: click, selector: "li.next a"}
      - {action: click, selector: "li.next a"}
    """
    outcome = sqlite_runtime.run_loaded(template(body), {"base_url": demo.url}, identity=f"ck-{id(stored)}")
    assert outcome.status == "completed", outcome
    run = sqlite_runtime.store.runs.get_run(outcome.run_id)
    assert run is not None and run.checkpoint is not None and run.checkpoint["seq"] == 3
    assert len(stored) == 2  # the first checkpoint's, and the run end's
