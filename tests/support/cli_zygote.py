"""``browserq`` commands as processes, without paying their imports each time.

A test of the command line runs ``python -m browserq.cli ARGS`` as a user would: its own process,
environment, working directory, output and exit code. Most of such a process's CPU is importing
(``browserq runs``: ~0.9 CPU-s, of which ~0.8 imports; the suite ran ~190 of them). So the command
is forked from the ``commands`` zygote (:mod:`tests.support.zygote`), which has imported browserq's
store, runtime, producer and their libraries once: the child takes the command's environment,
working directory, stdin (``/dev/null`` unless given) and stdout/stderr as files, imports the
``browserq.cli`` package afresh (its consoles read ``FORCE_COLOR``, ``COLUMNS``… when they are
made), runs it as ``python -m`` does and exits through the interpreter's normal shutdown. Tests
that are *about* the process — what it imports, how it starts — start a real one
(``tests/cli/test_lazy_imports.py``); ``tests/cli/test_zygote.py`` holds a forked command to a
fresh one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support.workers import browserq_env
from tests.support.zygote import Zygote

ZYGOTE = Zygote("commands", browserq_env)


def _read(path: Path) -> str:
    with open(path, newline=None) as f:  # universal newlines, as subprocess's text mode
        return f.read()


def _forked(args: Sequence[str], *, cwd: Path | str, env: Mapping[str, str], timeout: float, shown_as: list[str],
            input: str | None) -> subprocess.CompletedProcess[str]:
    """Like :func:`subprocess.run` with ``capture_output=True, text=True, timeout=timeout``
    (TimeoutExpired after killing the command's process group)."""
    with tempfile.TemporaryDirectory(prefix="bq_cmd_") as scratch:
        out, err, given = (Path(scratch) / name for name in ("stdout", "stderr", "stdin"))
        out.touch()
        err.touch()
        if input is not None:
            given.write_text(input)
        process = ZYGOTE.fork("browserq.cli", args, cwd=cwd, env=env, stdin=given if input is not None else os.devnull,
                              stdout=out, stderr=err, session=False, shown_as=shown_as)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            raise subprocess.TimeoutExpired(shown_as, timeout, _read(out), _read(err)) from None
        return subprocess.CompletedProcess(shown_as, code, _read(out), _read(err))


def browserq_command(args: Sequence[str], *, env: Mapping[str, str], cwd: Path | str | None = None,
                     timeout: float = 180, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m browserq.cli ARGS`` with ``env`` (the whole environment) in ``cwd`` (default:
    this process's), output captured as text — forked from :data:`ZYGOTE`, or a fresh process
    when ``TEST_CLI_ZYGOTE=0`` (to tell a zygote's effect from a real regression)."""
    argv = [sys.executable, "-m", "browserq.cli", *args]
    where = cwd if cwd is not None else os.getcwd()
    if os.environ.get("TEST_CLI_ZYGOTE") == "0":
        return subprocess.run(argv, cwd=where, env=dict(env), input=input, capture_output=True, text=True,
                              timeout=timeout)
    return _forked(args, cwd=where, env=env, timeout=timeout, shown_as=argv, input=input)
