"""Run observers see a run's life in order (real Chromium, the demo site, SQLite), and an
observer that raises never changes the run."""

from __future__ import annotations

from typing import Any

from browserq.execute import Runtime
from browserq.run_events import RunEnded, RunObserver, RunStarted, StepEvent, StepStarted
from tests.conftest import template

THREE_STEPS = """
params:
  base_url: {type: url, required: true}
settings: {trace: off, step_timeout_s: 10, step_retries: 1}
steps:
  - {action: navigate, url: "${base_url}/quotes/"}
  - {action: get, what: title, into: title}
  - {action: click, selector: "#nothing-like-this", timeout_s: 0.5}
"""


class Recorder(RunObserver):
    def __init__(self) -> None:
        self.events: list[Any] = []

    def run_started(self, event: RunStarted) -> None:
        self.events.append(event)

    def step_started(self, event: StepStarted) -> None:
        self.events.append(event)

    def step_finished(self, event: StepEvent) -> None:
        self.events.append(event)

    def run_ended(self, event: RunEnded) -> None:
        self.events.append(event)


class Broken(RunObserver):
    def step_started(self, event: StepStarted) -> None:
        raise RuntimeError("dashboard down")

    def run_ended(self, event: RunEnded) -> None:
        raise RuntimeError("dashboard down")


def test_observers_see_each_attempt_in_order_and_a_broken_one_changes_nothing(
    sqlite_runtime: Runtime, demo: Any
) -> None:
    recorder, broken = Recorder(), Broken()
    observers = sqlite_runtime.observers
    assert observers is sqlite_runtime.runner.observers  # one registry for the runtime and its runner
    observers.add(broken)
    observers.add(recorder)
    try:
        outcome = sqlite_runtime.run_loaded(template(THREE_STEPS), {"base_url": demo.url})
    finally:
        observers.remove(broken)
        observers.remove(recorder)
    assert outcome.status == "failed" and outcome.error_code == "SELECTOR_NOT_FOUND"

    kinds = [type(e).__name__ for e in recorder.events]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunEnded"
    assert kinds[1:-1] == ["StepStarted", "StepEvent"] * 4  # 2 steps, then the click and its retry
    started = [e for e in recorder.events if isinstance(e, StepStarted)]
    assert [(e.step, e.of, e.action, e.attempt) for e in started] == [
        (1, 3, "navigate", 1), (2, 3, "get", 1), (3, 3, "click", 1), (3, 3, "click", 2),
    ]
    assert started[1].url and started[1].url.startswith(demo.url)
    assert all(e.run_id == outcome.run_id for e in recorder.events)
    finished = [e for e in recorder.events if isinstance(e, StepEvent)]
    assert [e.status for e in finished] == ["succeeded", "succeeded", "failed", "failed"]
    ended = recorder.events[-1]
    assert ended.status == "failed" and ended.error_code == "SELECTOR_NOT_FOUND"
    assert ended.template == recorder.events[0].template and ended.duration_s > 0
