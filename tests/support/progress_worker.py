"""A real worker for the live-progress tests (tests/e2e/test_progress.py, tests/cli/test_enqueue.py):
slow-ish templates (navigations with waits, so a poller sees several steps), a failing one, one
that names its own queue, one with a secret param; the worker consumes that queue too.

Template names start with ``prog_`` (the session's database pins every used name@version to its
body, so they must not collide with other suites' templates).
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import stop
from tests.support.templates import write_templates
from tests.support.workers import (
    browserq_env,
    browserq_worker_argv,
    spawn_worker,
    wait_for_log,
    worker_settings,
)

#: Six top-level steps, about four seconds in all (``slow_ms``: each of two pages' delay).
STEPS_TEMPLATE = """
params:
  base_url: {type: url, required: true}
  slow_ms: {type: int, default: 400, min: 0, max: 60000}
settings: {trace: off, run_retries: 0, step_timeout_s: 30}
steps:
  - {id: first, action: navigate, url: "${base_url}/slow?ms=${slow_ms}"}
  - {action: wait, ms: 800}
  - {id: second, action: navigate, url: "${base_url}/slow?ms=${slow_ms}"}
  - {action: wait, ms: 800}
  - {id: third, action: navigate, url: "${base_url}/quotes/"}
  - {action: wait, ms: 800}
"""
STEPS_OF = 6
#: Held at its second step until the test opens the demo site's gate ``${gate}``: a follower is
#: certain to see the run under way, however slowly it starts on a loaded machine.
GATED_TEMPLATE = """
params:
  base_url: {type: url, required: true}
  gate: {type: string, required: true}
settings: {trace: off, run_retries: 0, step_timeout_s: 90}
steps:
  - {id: first, action: navigate, url: "${base_url}/quotes/"}
  - {id: held, action: navigate, url: "${base_url}/gate?name=${gate}"}
  - {action: assert, selector: "#gate", message: "the gate let the run through"}
"""
GATED_STEPS_OF = 3
FAIL_TEMPLATE = """
params:
  base_url: {type: url, required: true}
settings: {trace: off, run_retries: 0, step_timeout_s: 10}
steps:
  - {action: navigate, url: "${base_url}/quotes/"}
  - {action: wait, ms: 800}
  - {action: assert, selector: "#nothing-like-this", message: "the page has no such element"}
"""
SECRET_TEMPLATE = """
params:
  base_url: {type: url, required: true}
  password: {type: secret, required: true}
settings: {trace: off, run_retries: 0, step_timeout_s: 10}
steps:
  - {action: navigate, url: "${base_url}/login"}
  - {action: fill, selector: "#password", value: "${password}"}
"""


def routed_template(queue: str) -> str:
    return f"""
params:
  base_url: {{type: url, required: true}}
settings: {{trace: off, run_retries: 0, queue: {queue}}}
steps:
  - {{action: navigate, url: "${{base_url}}/quotes/"}}
"""


@dataclass
class ProgressWorker:
    env: dict[str, str]
    queue: str
    routed_queue: str
    log: Path
    proc: subprocess.Popen


@contextmanager
def progress_worker(
    tmp: Path, database_url: str, broker_url: str, *, result_backend: str | None = None,
    pool: str = "prefork", concurrency: int = 1, secret_key: str,
) -> Iterator[ProgressWorker]:
    """``browserq worker`` (``pool``, ``concurrency``) on a queue of its own plus the routed
    template's queue, until its browser is warm; a warm shutdown afterwards."""
    queue = f"bq_prog_{uuid.uuid4().hex[:8]}"
    routed = f"{queue}_routed"
    templates = write_templates(tmp / "templates", {
        "prog_steps": STEPS_TEMPLATE, "prog_gated": GATED_TEMPLATE, "prog_fail": FAIL_TEMPLATE, "prog_secret": SECRET_TEMPLATE,
        "prog_routed": routed_template(routed),
    })
    env = browserq_env(worker_settings(
        broker_url=broker_url, database_url=database_url, templates_dir=templates,
        artifacts_dir=tmp / "artifacts", queue=queue, secret_key=secret_key,
    ))
    if result_backend is not None:
        env["BROWSERQ_RESULT_BACKEND"] = result_backend
    log = tmp / f"worker-{queue}.log"
    proc = spawn_worker(
        browserq_worker_argv(queue, concurrency=concurrency, extra=("--pool", pool, "-Q", routed)),
        env, log,
    )
    try:
        wait_for_log(proc, log, lambda text: "ready." in text and "runtime started" in text, 120,
                     "the progress worker to warm its browser")
        yield ProgressWorker(env, queue, routed, log, proc)
    finally:
        stop(proc, 60, group=True)
