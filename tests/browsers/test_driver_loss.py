"""A dead Playwright driver (killed, out of memory) is replaced; a worker that cannot get a
browser back says so instead of failing every run."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserq.browsers.launcher import chromium_pids_with_marker
from browserq.execute.accept import prepare_loaded, record_run
from browserq.execute.errors import WorkerUnusable
from browserq.execute.runtime import Runtime
from tests.conftest import make_settings, template
from tests.support.polling import wait_until
from tests.support.processes import driver_pids, is_alive


@pytest.fixture
def own_runtime(tmp_path: Path) -> Iterator[tuple[Runtime, int]]:
    """A runtime with its own driver, and that driver's PID."""
    before = driver_pids(os.getpid())
    runtime = Runtime(make_settings(tmp_path)).start()
    (driver,) = driver_pids(os.getpid()) - before
    yield runtime, driver
    runtime.stop()


def _quotes(url: str, wait_ms: int = 0):
    wait = f"\n  - {{action: wait, ms: {wait_ms}}}" if wait_ms else ""
    return template(
        f'settings: {{trace: off}}\nsteps:\n  - {{action: navigate, url: "{url}/quotes/"}}{wait}\n'
        '  - {action: get, what: count, selector: ".quote", into: n}'
    )


def test_a_killed_driver_is_restarted_and_the_next_run_completes(own_runtime, demo) -> None:
    runtime, driver = own_runtime
    marker = runtime.pool.marker
    assert runtime.run_loaded(_quotes(demo.url)).status == "completed"
    os.kill(driver, signal.SIGKILL)  # what the kernel's OOM killer does
    outcome = runtime.run_loaded(_quotes(demo.url))
    assert outcome.status == "completed" and outcome.outputs["n"] == 10, outcome
    assert runtime.pool.driver_restarts == 1 and runtime.pool.marker != marker
    # The old driver's Chromium does not linger.
    wait_until(lambda: not any(is_alive(p) for p in chromium_pids_with_marker(marker)), 10,
               "the old driver's Chromium to exit", interval_s=0.2)
    assert runtime.run_loaded(_quotes(demo.url)).status == "completed"


def test_a_driver_dying_mid_run_resumes_the_run(own_runtime, demo) -> None:
    runtime, driver = own_runtime
    # node aborts like this when its heap runs out (V8 "JavaScript heap out of memory").
    threading.Timer(4.0, os.kill, (driver, signal.SIGABRT)).start()
    outcome = runtime.run_loaded(_quotes(demo.url, wait_ms=8000))
    assert outcome.status == "completed" and outcome.outputs["n"] == 10, outcome
    steps = runtime.store.steps.steps(outcome.run_id)
    assert "BROWSER_CRASHED" in {s.error_code for s in steps}
    assert runtime.pool.driver_restarts == 1


@pytest.mark.full_chromium  # breaks BROWSERQ_CHROMIUM_PATH, the chromium engine's
def test_a_worker_that_cannot_get_a_browser_back_hands_the_run_back(own_runtime, demo, tmp_path) -> None:
    runtime, driver = own_runtime
    # From now on Chromium cannot start (as if its binary vanished or the host ran out of memory).
    runtime.pool._settings = runtime.pool._settings.model_copy(
        update={"chromium_path": str(tmp_path / "no-chromium")}
    )
    os.kill(driver, signal.SIGKILL)
    prepared = prepare_loaded(_quotes(demo.url), {})
    record_run(runtime.store, prepared, secret_box=None)
    with pytest.raises(WorkerUnusable) as caught:
        runtime.execute(prepared.run_id)
    assert "could not relaunch Chromium" in str(caught.value)
    run = runtime.store.runs.get_run(prepared.run_id)
    assert run.status == "retrying" and run.lease_owner is None, run
    with pytest.raises(WorkerUnusable):  # fails at once from now on: no run is tried and failed
        runtime.execute(prepared.run_id)
    assert runtime.store.runs.get_run(prepared.run_id).status == "retrying"

