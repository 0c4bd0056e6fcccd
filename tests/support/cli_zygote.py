"""``browserq`` commands as processes, without paying their imports each time.

A test of the command line runs ``python -m browserq.cli ARGS`` as a user would: its own process,
environment, working directory, output and exit code. Most of such a process's CPU is importing
(``browserq runs``: ~0.9 CPU-s, of which ~0.8 imports; the suite ran ~190 of them). So each xdist
worker keeps one *zygote*: a Python that has imported browserq's store, runtime, settings and
their libraries once, and forks a child per command. The child takes the command's environment
(``os.environ`` replaced in place), working directory, stdin (``/dev/null`` unless given) and
stdout/stderr as files, re-imports the ``browserq.cli`` package (its consoles read ``FORCE_COLOR``,
``COLUMNS``… when they are made), runs it as ``python -m`` does (:func:`runpy.run_module`) and
exits through the interpreter's normal shutdown. Tests that are *about* the process — what it
imports, how it starts — start a real one (``tests/cli/test_lazy_imports.py``).

The zygote listens on a Unix socket; per connection it forks a waiter that forks the command,
sends its pid, waits for it and sends its exit status, so commands may run concurrently. It exits
when its stdin closes (the worker that started it went away).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support.workers import browserq_env

REPO = Path(__file__).resolve().parents[2]

#: Imported once in the zygote: what a command spends its start on. ``browserq.cli`` itself is
#: imported to pull in its libraries, then dropped so each child makes its consoles anew.
PRELOAD = ("browserq.cli", "browserq.execute.runtime", "browserq.store", "browserq.submit.producer",
           "browserq.report", "playwright.async_api")
FRESH = "browserq.cli"


# --- the zygote's side ---------------------------------------------------------------------------
def _preload() -> None:
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    for name in [m for m in sys.modules if m == FRESH or m.startswith(FRESH + ".")]:
        del sys.modules[name]
    parent = sys.modules.get("browserq")
    if parent is not None and hasattr(parent, "cli"):
        delattr(parent, "cli")


def _serve(listener: socket.socket) -> None:
    """Accept requests until stdin closes; each one is handled in a forked waiter (the child's
    return from here means: run its command)."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # waiters are reaped by the kernel
    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in ready and not sys.stdin.buffer.read1(1):
            os._exit(0)
        if listener in ready:
            conn, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                _wait_for_command(conn)  # returns only in the command's process
                return
            conn.close()


def _wait_for_command(conn: socket.socket) -> None:
    """In the waiter: read the request, fork the command, report its pid and exit status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    request = json.loads(conn.makefile("r").readline())
    pid = os.fork()
    if pid == 0:
        conn.close()
        _become_command(request)
        return
    conn.sendall(f"{pid}\n".encode())
    _, status = os.waitpid(pid, 0)
    conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
    conn.close()
    os._exit(0)


def _become_command(request: dict[str, object]) -> None:
    os.setpgrp()  # a timeout kills the command and what it started
    os.chdir(str(request["cwd"]))
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    for fd, path, mode in ((0, request["stdin"], os.O_RDONLY), (1, request["stdout"], os.O_WRONLY),
                           (2, request["stderr"], os.O_WRONLY)):
        opened = os.open(str(path), mode)
        os.dup2(opened, fd)
        os.close(opened)
    sys.path[0] = os.getcwd()  # as ``python -m`` puts the working directory first
    argv = request["argv"]
    assert isinstance(argv, list)
    sys.argv = ["browserq.cli", *argv]


def main() -> None:
    path = sys.argv[1]
    _preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    _serve(listener)
    # Only a command's process gets here: run it as ``python -m browserq.cli`` would; its exit
    # status is SystemExit's, or 1 after a traceback, through the interpreter's own shutdown.
    import runpy

    runpy.run_module(FRESH, run_name="__main__", alter_sys=True)


# --- the test's side -----------------------------------------------------------------------------
class Zygote:
    """One zygote per test process, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="bq_zygote_"))
        self._socket = self._dir / "zygote.sock"
        atexit.register(self.stop)

    def _started(self) -> Path:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                with contextlib.suppress(FileNotFoundError):
                    self._socket.unlink()
                env = browserq_env()
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "tests.support.cli_zygote", str(self._socket)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**env, "PYTHONPATH": str(REPO)},
                    text=True, cwd=self._dir)
                assert self._process.stdout is not None
                if self._process.stdout.readline().strip() != "ready":
                    raise RuntimeError("the browserq command zygote did not start")
            return self._socket

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.stdin is not None:
            process.stdin.close()
            process.wait(10)

    def run(self, argv: Sequence[str], *, cwd: Path | str, env: Mapping[str, str], timeout: float,
            shown_as: list[str], input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``browserq.cli argv`` in a forked child; like :func:`subprocess.run` with
        ``capture_output=True, text=True, timeout=timeout`` (TimeoutExpired after killing it)."""
        sock_path = self._started()
        with tempfile.TemporaryDirectory(prefix="bq_cmd_") as scratch:
            out, err, given = (Path(scratch) / name for name in ("stdout", "stderr", "stdin"))
            out.touch()
            err.touch()
            if input is not None:
                given.write_text(input)
            request = {"argv": list(argv), "cwd": str(cwd), "env": dict(env), "stdout": str(out),
                       "stderr": str(err), "stdin": str(given) if input is not None else os.devnull}
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(str(sock_path))
                conn.sendall((json.dumps(request) + "\n").encode())
                replies = conn.makefile("r")
                pid = int(replies.readline())
                conn.settimeout(timeout)
                try:
                    line = replies.readline()
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                    raise subprocess.TimeoutExpired(shown_as, timeout, _read(out), _read(err)) from None
            if not line:
                raise RuntimeError(f"the browserq command zygote lost command {pid}")
            return subprocess.CompletedProcess(shown_as, int(line), _read(out), _read(err))


def _read(path: Path) -> str:
    with open(path, newline=None) as f:  # universal newlines, as subprocess's text mode
        return f.read()


ZYGOTE = Zygote()


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
    return ZYGOTE.run(args, cwd=where, env=env, timeout=timeout, shown_as=argv, input=input)

if __name__ == "__main__":
    main()
