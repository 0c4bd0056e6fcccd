"""Real workers in subprocesses: their environment, starting them with a log file, waiting until
their log says they are ready.

Why subprocesses: Celery's prefork pool, worker signals and process deaths are what these tests
are about; an in-process worker would share this process's browser, settings and signal handlers.
Every process starts in a session of its own, so :func:`tests.support.processes.stop` and
``kill_group`` reach the worker, its pool children and their browsers at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.support import REPO
from tests.support.polling import wait_until
from tests.support.zygote import ForkedProcess, Zygote

#: ``celery -A browserq.celery_app:app`` with this interpreter (the venv's Celery).
CELERY = (sys.executable, "-m", "celery", "-A", "browserq.celery_app:app")


def browserq_env(variables: Mapping[str, str] = {}) -> dict[str, str]:
    """This process's environment without its own ``BROWSERQ_*`` settings — but for the suite's
    browser engine (``BROWSERQ_BROWSER``, :func:`tests.support.isolation.suite_engine`) — plus
    ``variables`` and ``PYTHONPATH`` set to the repository (so that a worker or command imports
    this checkout's browserq)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERQ_") or k == "BROWSERQ_BROWSER"}
    env.update(variables)
    env["PYTHONPATH"] = str(REPO)
    return env


def worker_settings(
    *, broker_url: str, database_url: str, templates_dir: Path, artifacts_dir: Path, queue: str, secret_key: str
) -> dict[str, str]:
    """The ``BROWSERQ_*`` settings every test worker runs with: its broker, its database (also the
    result backend), its templates and artifacts, a queue of its own, and quick step retries."""
    return {
        "BROWSERQ_BROKER_URL": broker_url,
        "BROWSERQ_RESULT_BACKEND": f"db+{database_url}",
        "BROWSERQ_DATABASE_URL": database_url,
        "BROWSERQ_TEMPLATES_DIR": str(templates_dir),
        "BROWSERQ_ARTIFACTS_DIR": str(artifacts_dir),
        "BROWSERQ_QUEUE": queue,
        "BROWSERQ_SECRET_KEY": secret_key,
        "BROWSERQ_STEP_RETRY_DELAY_S": "0.05",
        "BROWSERQ_CHECKPOINT_INTERVAL_MS": "0",  # a checkpoint after every new page (chaos, resume)
    }


def browserq_worker_argv(name: str, *, concurrency: int = 1, extra: tuple[str, ...] = ()) -> list[str]:
    """``browserq worker`` as the tests start it: named ``NAME@%h``, no gossip or mingle (each test's
    workers are alone on their queue)."""
    return [sys.executable, "-m", "browserq.cli", "worker", "-c", str(concurrency), *extra,
            "-n", f"{name}@%h", "--without-gossip", "--without-mingle"]


def spawn_logged(argv: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen:
    """Start ``argv`` in the repository, in a session of its own, stdout and stderr appended to
    ``log`` (the child keeps the file open; this process does not need to)."""
    with log.open("ab") as handle:
        return subprocess.Popen(
            argv, env=dict(env), stdout=handle, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
        )


#: The workers' zygote (:mod:`tests.support.zygote`): Celery and the other libraries imported once.
WORKERS = Zygote("workers", browserq_env)


def spawn_worker(argv: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen | ForkedProcess:
    """A worker (``python -m celery …`` or ``python -m browserq.cli worker …``) as
    :func:`spawn_logged` starts it — in a session of its own, output appended to ``log`` — but
    forked from :data:`WORKERS`: ~0.7 CPU-s (imports) less a start. A real process when
    ``TEST_WORKER_ZYGOTE=0``, when ``env`` has ``LD_PRELOAD`` (libfaketime acts at ``exec``), and
    for tests about the process itself (they call :func:`spawn_logged`: its command line, the
    environment in ``/proc``, the chaos tests' tags)."""
    if os.environ.get("TEST_WORKER_ZYGOTE") == "0" or "LD_PRELOAD" in env or argv[:2] != [sys.executable, "-m"]:
        return spawn_logged(argv, env, log)
    log.touch()
    return WORKERS.fork(argv[2], argv[3:], cwd=REPO, env=env, stdin=os.devnull, stdout=log, stderr=log, session=True,
                        shown_as=argv)


def read_log(log: Path) -> str:
    return log.read_text(errors="replace") if log.exists() else ""


def wait_for_log(
    proc: subprocess.Popen | ForkedProcess, log: Path, ready: Callable[[str], bool], timeout_s: float, what: str
) -> None:
    """Wait until ``ready(log text)``; fail at once if the process exits first, and with the log's
    tail either way (a worker that does not start says why in its log)."""

    def state() -> str:
        if proc.poll() is not None:
            return f"exited with {proc.returncode}"
        return "ready" if ready(read_log(log)) else ""

    try:
        outcome = wait_until(state, timeout_s, what, interval_s=0.2)
    except AssertionError as timed_out:
        outcome = str(timed_out)
    if outcome != "ready":
        raise AssertionError(f"{what}: {outcome}:\n{read_log(log)[-4000:]}")
