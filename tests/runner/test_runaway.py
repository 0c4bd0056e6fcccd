"""A page script that never ends is a failed step, never a hung run or a lost browser."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from browserq.execute.runtime import Runtime
from tests.conftest import template
from tests.test_cli import browserq

#: Arms a loop that starts right after the step that arms it ends: the next step meets a busy page.
ARM = "setTimeout(() => { while (true) {} }, 0); 1"


def _next_run_completes(runtime: Runtime, url: str) -> None:
    healthy = template(
        """
        settings: {allow_eval: true, trace: off}
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: eval, expression: "document.querySelectorAll('.quote').length", into: n}
        """
        % url
    )
    outcome = runtime.run_loaded(healthy)
    assert outcome.status == "completed" and outcome.outputs["n"] == 10, outcome


def test_runaway_eval_fails_timeout_with_snapshot_and_keeps_the_browser(pg_runtime: Runtime, demo) -> None:
    pid_before, launches_before = pg_runtime.pool.pid, pg_runtime.pool.launches
    loaded = template(
        """
        settings: {allow_eval: true, timeout_s: 120}
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: eval, expression: "(() => { while(true){} })()", timeout_s: 4, retries: 1}
        """
        % demo.url
    )
    outcome = pg_runtime.run_loaded(loaded)
    assert outcome.status == "failed" and outcome.error_code == "TIMEOUT", outcome
    assert outcome.error_step_path == "1"
    steps = [s for s in pg_runtime.store.steps.steps(outcome.run_id) if s.step_path == "1"]
    assert [(s.attempt, s.status, s.error_code) for s in steps] == [(1, "failed", "TIMEOUT"), (2, "failed", "TIMEOUT")]
    kinds = {a.kind for a in pg_runtime.store.steps.artifacts(outcome.run_id)}
    # The script was ended, so the page could still be photographed and serialized.
    assert {"failure_screenshot", "dom", "console", "network", "trace"} <= kinds
    assert pg_runtime.pool.pid == pid_before and pg_runtime.pool.launches == launches_before
    assert pg_runtime.pool.open_contexts == 0
    _next_run_completes(pg_runtime, demo.url)
    assert pg_runtime.pool.pid == pid_before


def test_every_action_on_a_busy_page_ends_at_its_timeout(sqlite_runtime: Runtime, demo) -> None:
    """Actions whose Playwright calls have no timeout (evaluate, count, title, keyboard) too."""
    pid_before = sqlite_runtime.pool.pid
    actions = [
        '{action: get, what: title, into: t}',
        '{action: get, what: count, selector: ".quote", into: c}',
        '{action: scroll, pixels: 500}',
        '{action: scroll, to: bottom}',
        '{action: extract, selector: ".quote", fields: {text: ".text"}, into: q}',
        '{action: press, key: End}',
        '{action: click, selector: ".quote"}',
        '{action: eval, expression: "1 + 1"}',
    ]
    lines = [f'  - {{action: navigate, url: "{demo.url}/quotes/"}}']
    for action in actions:
        lines.append(f'  - {{action: eval, expression: "{ARM}"}}')
        # The armed loop starts at the page's next timer task; a protocol message may be served
        # before it, so give it a moment (a wait is a sleep in Python: it does not touch the page).
        lines.append("  - {action: wait, ms: 300}")
        lines.append("  - " + action[:-1] + ", timeout_s: 1, continue_on_error: true}")
    lines.append('  - {action: eval, expression: "document.title", into: alive}')
    loaded = template(
        "settings: {allow_eval: true, timeout_s: 300, step_retries: 0, trace: off}\nsteps:\n"
        + "\n".join(lines)
    )
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["alive"].startswith("Quotes")  # the page answers again after all that
    records = sqlite_runtime.store.steps.steps(outcome.run_id)
    busy = [s for s in records if s.step_path in {str(3 * i + 3) for i in range(len(actions))}]
    assert [s.action for s in busy] == [a.split(",")[0].split(": ")[1] for a in actions]
    for record in busy:
        assert record.status == "failed", (record.action, record.status)
        assert record.error_code in {"TIMEOUT", "ELEMENT_NOT_ACTIONABLE"}, (record.action, record.error_code)
    assert sqlite_runtime.pool.pid == pid_before


def test_run_timeout_holds_in_process_with_a_runaway_script(sqlite_runtime: Runtime, demo) -> None:
    """The run's timeout_s ends a run whose step timeout is longer (no Celery soft limit here)."""
    pid_before = sqlite_runtime.pool.pid
    loaded = template(
        """
        settings: {allow_eval: true, timeout_s: 6, step_timeout_s: 600, run_retries: 0}
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: eval, expression: "(() => { while(true){} })()"}
        """
        % demo.url
    )
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "failed" and outcome.error_code == "RUN_TIMEOUT", outcome
    kinds = {a.kind for a in sqlite_runtime.store.steps.artifacts(outcome.run_id)}
    assert {"failure_screenshot", "dom"} <= kinds
    assert sqlite_runtime.pool.pid == pid_before
    _next_run_completes(sqlite_runtime, demo.url)


def test_a_script_that_rearms_itself_still_ends_at_the_step_timeout(sqlite_runtime: Runtime, demo) -> None:
    """Terminating one callback lets the next start: the step still ends at its timeout, the page
    is ended or dropped, the browser stays."""
    pid_before = sqlite_runtime.pool.pid
    loaded = template(
        """
        settings: {allow_eval: true, timeout_s: 120, trace: off}
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: eval, expression: "setInterval(() => { const t = Date.now(); while (Date.now() - t < 10000) {} }, 0); 1"}
          - {action: get, what: title, into: t, timeout_s: 2}
        """
        % demo.url
    )
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "failed" and outcome.error_code == "TIMEOUT", outcome
    attempts = [s for s in sqlite_runtime.store.steps.steps(outcome.run_id) if s.step_path == "2"]
    assert attempts and {s.error_code for s in attempts} == {"TIMEOUT"}
    assert sqlite_runtime.pool.pid == pid_before and sqlite_runtime.pool.open_contexts == 0
    _next_run_completes(sqlite_runtime, demo.url)


@pytest.mark.slow
def test_browserq_run_ends_a_runaway_run_at_its_timeout(tmp_path: Path, site) -> None:
    """`browserq run` (in-process, no Celery soft limit) used to wait forever."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "spin.yaml").write_text(
        textwrap.dedent(
            """
            name: spin
            version: 1.0.0
            params:
              url: {type: url, required: true}
            settings: {allow_eval: true, timeout_s: 8, step_timeout_s: 600, run_retries: 0}
            steps:
              - {action: navigate, url: "${url}"}
              - {action: eval, expression: "(() => { while(true){} })()"}
            """
        )
    )
    done = browserq(
        tmp_path, "run", "spin", "-p", f"url={site.url}/quotes/", timeout=240,
        BROWSERQ_TEMPLATES_DIR=str(templates),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "RUN_TIMEOUT" in done.stdout and "Traceback" not in done.stdout + done.stderr


@pytest.mark.timeout(240, method="thread")  # Python's re would hold the GIL: signals cannot stop it
def test_a_catastrophic_url_regex_from_a_param_cannot_stall_the_worker(sqlite_runtime: Runtime, demo) -> None:
    pid_before = sqlite_runtime.pool.pid
    loaded = template(
        """
        params:
          p: {type: string, required: true}
        settings: {timeout_s: 60, trace: off}
        steps:
          - {action: navigate, url: "%s/quotes/?q=%s!"}
          - {action: wait, url: "re:${p}", timeout_s: 3, retries: 0}
        """
        % (demo.url, "a" * 3000)
    )
    outcome = sqlite_runtime.run_loaded(loaded, {"p": "(a+)+$"})
    assert outcome.status == "failed" and outcome.error_code == "TIMEOUT", outcome
    assert outcome.error_step_path == "1"
    assert sqlite_runtime.pool.pid == pid_before
    _next_run_completes(sqlite_runtime, demo.url)


def test_a_run_that_completes_with_a_runaway_script_armed_still_closes_its_context(
    sqlite_runtime: Runtime, demo
) -> None:
    """A completed run leaves no snapshot or trace, so its end does not ask the page to answer:
    its context is closed with the loop still running (gone from the browser, not only from the
    pool's books), and the browser serves the next run."""
    pool = sqlite_runtime.pool
    pid_before = pool.pid
    armed = template(
        """
        settings: {allow_eval: true, trace: off}
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: eval, expression: "%s", into: armed}
        """
        % (demo.url, ARM)
    )
    outcome = sqlite_runtime.run_loaded(armed)
    assert outcome.status == "completed" and outcome.outputs["armed"] == 1, outcome
    assert pool.open_contexts == 0
    browser = pool._current_instance().browser
    sqlite_runtime.loop.run(_spares_settled(pool), timeout=30)
    assert len(browser.contexts) == pool.spare_contexts  # the run's own context is closed
    _next_run_completes(sqlite_runtime, demo.url)
    assert sqlite_runtime.pool.pid == pid_before


async def _spares_settled(pool) -> None:
    """Wait for the refill the run's close started (it adds the one context we expect besides)."""
    import asyncio

    task = pool._refill_task
    if task is not None:
        await asyncio.gather(task, return_exceptions=True)
