"""One step at a time: :class:`StepAttempt` on its own, on a context the runner's parts opened.

What agent sessions build on (a command and a template step are the same thing: one executor,
one set of guards): open a context through the :class:`ContextLease`, send single steps to
:meth:`StepAttempt.run`, read the outcome it returns and the attempts it recorded. A failing step
is an outcome, not the end of the context: the next step runs on the same page."""

from __future__ import annotations

from browserq.errors import Codes
from browserq.execute.runtime import Runtime
from browserq.redact import Redactor
from browserq.runner import RunRequest, StepOutcome, StepResult
from tests.conftest import template


def test_single_steps_run_on_an_open_context_and_each_is_recorded(sqlite_runtime: Runtime, demo) -> None:
    runtime, runner = sqlite_runtime, sqlite_runtime.runner
    loaded = template(f"""
        settings: {{trace: off, step_timeout_s: 2}}
        steps:
          - {{action: navigate, url: "{demo.url}/quotes/"}}
          - {{id: nothing, action: click, selector: "#no-such-button", retries: 0}}
          - {{action: get, what: url, into: here}}
    """)
    run_id = runtime.submit_loaded(loaded).run_id
    steps = loaded.template.steps

    async def one_at_a_time() -> tuple[list[StepResult], bool]:
        state = runner.new_state(RunRequest(run_id=run_id, run_attempt=1, loaded=loaded, params={}), Redactor())
        await runner.context.open(state)
        try:
            results = [await runner.attempt.run(step, str(index), state) for index, step in enumerate(steps)]
            open_after = state.browser.page is not None and not state.browser.page.is_closed()
        finally:
            await runner.context.close(state)
            await state.journal.flush()
        return results, open_after

    (opened, missing, here), open_after = runtime.loop.run(one_at_a_time(), timeout=120)

    assert (opened.outcome, opened.failure) == (StepOutcome.SUCCEEDED, None)
    assert missing.outcome is StepOutcome.FAILED
    assert missing.failure is not None and missing.failure.code is Codes.SELECTOR_NOT_FOUND
    assert "#no-such-button" in missing.failure.message
    # the context is still usable after the failure: the next step runs on the same page
    assert here.outcome is StepOutcome.SUCCEEDED and here.output == f"{demo.url}/quotes/"
    assert open_after

    recorded = [(s.step_path, s.step_id, s.attempt, s.action, s.status, s.error_code)
                for s in runtime.store.steps.steps(run_id)]
    assert recorded == [
        ("0", None, 1, "navigate", "succeeded", None),
        ("1", "nothing", 1, "click", "failed", "SELECTOR_NOT_FOUND"),
        ("2", None, 1, "get", "succeeded", None),
    ]
