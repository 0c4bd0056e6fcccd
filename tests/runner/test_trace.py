"""When a run is traced (browserq/runner/trace.py): ``on_failure`` starts tracing at the first
retry and keeps the trace only when the run fails; a first try that succeeds records nothing.

Tracing is observed from outside: every call of Playwright's own ``Tracing.start`` is counted.
"""

from __future__ import annotations

import asyncio
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.async_api._generated import Tracing

from browserq.browsers.api import async_playwright
from browserq.execute.runtime import Runtime
from browserq.runner.trace import open_trace
from browserq.settings import load_settings
from tests.conftest import template

SNAPSHOT = {"failure_screenshot", "dom", "console", "network"}


@pytest.fixture
def tracing_starts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts calls of Playwright's ``Tracing.start`` (in the runtime's thread too)."""
    calls: list[int] = []
    original = Tracing.start

    async def counted(self: Tracing, *args: object, **kwargs: object) -> None:
        calls.append(1)
        await original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Tracing, "start", counted)
    yield calls


def _kinds(runtime: Runtime, run_id: str) -> set[str]:
    return {a.kind for a in runtime.store.steps.artifacts(run_id)}


def _trace_text(runtime: Runtime, run_id: str) -> bytes:
    artifact = next(a for a in runtime.store.steps.artifacts(run_id) if a.kind == "trace")
    with zipfile.ZipFile(runtime.settings.artifacts_dir / artifact.path) as archive:
        return b"".join(archive.read(n) for n in archive.namelist() if n.endswith(".trace"))


def test_a_step_retried_before_the_run_failed_leaves_a_trace_of_the_retry(
    any_runtime: Runtime, demo, tracing_starts: list[int]
) -> None:
    flaky = f"{demo.url}/flaky?key={uuid.uuid4().hex}&fail=1"  # 500 once, then 200
    loaded = template(
        f"""
        settings: {{trace: on_failure, step_timeout_s: 30}}
        steps:
          - {{action: navigate, url: "{flaky}", retries: 1}}
          - {{action: click, selector: "#never-there", timeout_s: 1, retries: 0}}
        """
    )
    outcome = any_runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code, outcome.error_step_path) == ("failed", "SELECTOR_NOT_FOUND", "1")
    attempts = [(s.step_path, s.attempt, s.status) for s in any_runtime.store.steps.steps(outcome.run_id)]
    assert attempts == [("0", 1, "failed"), ("0", 2, "succeeded"), ("1", 1, "failed")]
    assert _kinds(any_runtime, outcome.run_id) == SNAPSHOT | {"trace"}
    assert len(tracing_starts) == 1  # from the retry on, once
    recorded = _trace_text(any_runtime, outcome.run_id)
    assert b"flaky" in recorded and b"never-there" in recorded  # the retry and the failing step


def test_a_step_that_fails_without_retry_keeps_its_snapshot_and_starts_no_trace(
    any_runtime: Runtime, demo, tracing_starts: list[int]
) -> None:
    loaded = template(
        f"""
        settings: {{trace: on_failure, step_timeout_s: 30}}
        steps:
          - {{action: navigate, url: "{demo.url}/console-error", retries: 0}}
          - {{action: click, selector: "#does-not-exist", timeout_s: 1, retries: 0}}
        """
    )
    outcome = any_runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "SELECTOR_NOT_FOUND")
    base = any_runtime.settings.artifacts_dir
    artifacts = {a.kind: a for a in any_runtime.store.steps.artifacts(outcome.run_id)}
    assert set(artifacts) == SNAPSHOT  # the whole snapshot; no trace: nothing was retried
    assert (base / artifacts["failure_screenshot"].path).read_bytes()[:4] == b"\x89PNG"
    assert "<html" in (base / artifacts["dom"].path).read_text().lower()
    assert tracing_starts == []


@pytest.mark.parametrize(("mode", "starts", "kinds"), [("on_failure", 0, set()), ("always", 1, {"trace"})])
def test_a_run_that_succeeds_first_time_keeps_no_trace_and_on_failure_starts_none(
    sqlite_runtime: Runtime, demo, tracing_starts: list[int], mode: str, starts: int, kinds: set[str]
) -> None:
    loaded = template(
        f"""
        settings: {{trace: {mode}}}
        steps:
          - {{action: navigate, url: "{demo.url}/quotes/"}}
          - {{action: click, selector: "li.next a", optional: true}}
          - {{action: get, what: url, into: url}}
        """
    )
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert len(tracing_starts) == starts
    assert _kinds(sqlite_runtime, outcome.run_id) == kinds


def test_a_run_that_succeeds_after_a_retry_discards_its_trace(
    sqlite_runtime: Runtime, demo, tracing_starts: list[int]
) -> None:
    flaky = f"{demo.url}/flaky?key={uuid.uuid4().hex}&fail=1"
    loaded = template(f'settings: {{trace: on_failure}}\nsteps:\n  - {{action: navigate, url: "{flaky}", retries: 1}}')
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert len(tracing_starts) == 1
    assert _kinds(sqlite_runtime, outcome.run_id) == set()
    assert not list((sqlite_runtime.settings.artifacts_dir / outcome.run_id).glob(".trace*"))  # no chunk left


def test_open_trace_starts_at_once_for_always_and_for_a_retried_run(tmp_path: Path) -> None:
    """A retried run (lease attempt > 1, a resume too) is traced from its first step."""
    settings = load_settings()

    async def started_by_mode() -> dict[tuple[str, bool], bool | None]:
        found: dict[tuple[str, bool], bool | None] = {}
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=settings.resolve_chromium(), args=settings.chromium_launch_args(),
                chromium_sandbox=settings.chromium_sandbox,
            )
            try:
                for mode in ("off", "on_failure", "always"):
                    for retried in (False, True):
                        context = await browser.new_context()
                        recorder = await open_trace(context, tmp_path, mode, retried_run=retried)
                        found[(mode, retried)] = None if recorder is None else recorder.started
                        if recorder is not None:
                            assert await recorder.stop(keep=False) is None
                        await context.close()
            finally:
                await browser.close()
        return found

    assert asyncio.run(started_by_mode()) == {
        ("off", False): None, ("off", True): None,
        ("on_failure", False): False, ("on_failure", True): True,
        ("always", False): True, ("always", True): True,
    }
