"""A handover in one process (real Chromium, SQLite store): a run waiting at an explicit
``handoff`` step, in a process that is told to stop (:func:`browserq.runner.drain.request`), ends
its wait as ``handed_over``, is re-enqueued (``retrying``, fenced, no takeover) and, executed
again, resumes from its checkpoint and waits at the same step again; the person's click through
the new link lets it complete.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from browserq.demo.site import DemoSite
from browserq.execute.runtime import Runtime
from browserq.runner import drain
from tests.conftest import make_settings, template
from tests.live.test_handoff import PAGES, _act, _in_thread, _waiting_link
from tests.support.http import html_pages, serve_http
from tests.support.polling import wait_until


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_http(html_pages(PAGES)) as host:
        yield f"http://{host}"


@pytest.fixture
def runtime(tmp_path) -> Iterator[Runtime]:
    started = Runtime(make_settings(tmp_path)).start()
    yield started
    drain.reset()
    started.stop()


def test_a_waiting_step_is_handed_over_and_waits_again_when_resumed(
    runtime: Runtime, site: str
) -> None:
    loaded = template(f"""
        settings: {{trace: off, timeout_s: 30, run_retries: 0}}
        steps:
          - {{action: navigate, url: "{site}/gate"}}
          - {{id: ask, action: handoff, message: "click it", until: {{absent: "#captcha"}}, timeout_s: 600}}
          - {{id: text, action: get, selector: "#content", into: text}}
    """)
    thread, done = _in_thread(runtime, loaded)  # run_to_end: re-executes a handed-over run here
    run_id, _ = _waiting_link(runtime, thread)
    drain.request()
    wait_until(lambda: runtime.store.handoffs.handovers(run_id) >= 1, 30, "the wait to be handed over")
    drain.reset()  # the "other worker" (this process again) keeps its wait
    _, link = wait_until(
        lambda: (
            _waiting_link(runtime, thread) if len(runtime.store.handoffs.handoffs(run_id)) >= 2 else None
        ),
        60,
        "the run to wait again",
    )
    seen = asyncio.run(_act(link, [{"type": "click", "x": 200, "y": 130}]))
    assert seen["status"] == 200
    thread.join(60)
    [outcome] = done
    assert outcome.status == "completed" and outcome.outputs == {"text": "the protected text"}, (
        outcome
    )
    handoffs = runtime.store.handoffs.handoffs(run_id)
    assert [h.outcome for h in handoffs][-1] == "condition" and {
        h.outcome for h in handoffs[:-1]
    } == {"handed_over"}
    assert {h.step_path for h in handoffs} == {"1"}
    run = runtime.store.runs.get_run(run_id)
    assert run.takeovers == 0 and run.attempt == len(handoffs)
    reasons = [t.reason for t in runtime.store.transitions.transitions(run_id) if t.to_status == "retrying"]
    assert reasons and all(r.startswith("handed over") for r in reasons)
    asked = [s for s in runtime.store.steps.steps(run_id) if s.step_path == "1"]
    assert (
        asked[0].status == "failed"
        and asked[0].error_code == "WORKER_LOST"
        and asked[-1].status == "succeeded"
    )


def test_a_handover_spends_none_of_the_runs_retries(tmp_path, site: str) -> None:
    """run_retries: 1 — after a handover, a RUN_TIMEOUT still gets its one retry (attempt 3)."""
    runtime = Runtime(
        make_settings(tmp_path, run_retry_backoff_s=0.1, run_retry_backoff_max_s=0.2)
    ).start()
    demo = DemoSite().__enter__()
    try:
        loaded = template(f"""
            settings: {{trace: off, timeout_s: 8, run_retries: 1}}
            steps:
              - {{action: navigate, url: "{site}/gate"}}
              - {{id: ask, action: handoff, message: "click it", until: {{absent: "#captcha"}}, timeout_s: 600}}
              - {{action: navigate, url: "{demo.url}/slow?ms=30000", timeout_s: 60}}
        """)
        thread, done = _in_thread(runtime, loaded)
        run_id, _ = _waiting_link(runtime, thread)
        drain.request()
        wait_until(lambda: runtime.store.handoffs.handovers(run_id) >= 1, 30, "the wait to be handed over")
        drain.reset()
        _, link = wait_until(
            lambda: (
                _waiting_link(runtime, thread) if len(runtime.store.handoffs.handoffs(run_id)) >= 2 else None
            ),
            60,
            "the run to wait again",
        )
        asyncio.run(_act(link, [{"type": "click", "x": 200, "y": 130}]))
        thread.join(120)
        [outcome] = done
        assert (outcome.status, outcome.error_code) == ("failed", "RUN_TIMEOUT"), outcome
        handovers = runtime.store.handoffs.handovers(run_id)
        run = runtime.store.runs.get_run(run_id)
        assert run.attempt == handovers + 2 and run.takeovers == 0, (
            run.attempt,
            handovers,
        )  # a retry was left
        assert any("retry 1 of 1" in t.reason for t in runtime.store.transitions.transitions(run_id))
    finally:
        drain.reset()
        runtime.stop()
        demo.__exit__(None, None, None)
