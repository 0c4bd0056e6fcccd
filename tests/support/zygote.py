"""Python processes forked from a *zygote* that has already imported their libraries.

The suite starts hundreds of Python processes — ``browserq`` commands, Celery workers — and most
of a short-lived one's CPU is importing (``browserq runs``: ~0.9 CPU-s, ~0.8 of it imports; a
worker's parent ~1.3 CPU-s, ~1.0 of it imports). So each xdist worker keeps one zygote per *kind*
of process, started on first use:

* ``commands`` (:mod:`tests.support.cli_zygote`) has imported browserq's store, runtime, producer
  and their libraries; ``browserq.cli`` itself is dropped again so that each command makes its
  consoles anew (they read ``FORCE_COLOR``, ``COLUMNS``… when made).
* ``workers`` (:func:`tests.support.workers.worker_process`) has imported the *libraries* a worker
  needs (Celery, kombu, SQLAlchemy, psycopg, redis, pydantic, Playwright…) and no browserq module:
  browserq reads its settings and chooses its driver when imported, so each worker imports it
  afresh under its own environment, as ``python -m celery`` would.

A request names the module to run as ``python -m`` does, its arguments, environment (``os.environ``
replaced in place), working directory and files for stdin/stdout/stderr. The zygote listens on a
Unix socket; per connection it forks a waiter that forks the process, sends its pid, waits for it
and sends its exit status, so processes run concurrently and a test can hold one as long as it
likes (:class:`ForkedProcess`). It exits when its stdin closes (the test process went away).

What a forked process does not share with a started one, and where it matters the tests start a
real process (``TEST_CLI_ZYGOTE=0`` / ``TEST_WORKER_ZYGOTE=0`` turn the zygotes off): its command
line (``/proc/PID/cmdline``) and initial environment block (``/proc/PID/environ``) are the
zygote's; anything it ``exec``s (Chromium, node) gets its real environment.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: What each kind of zygote imports once, and the modules it drops again so that each child
#: imports them afresh.
PRELOAD: dict[str, tuple[str, ...]] = {
    "commands": ("browserq.cli", "browserq.execute.runtime", "browserq.store", "browserq.submit.producer",
                 "browserq.report", "playwright.async_api"),
    "workers": ("celery", "celery.worker", "celery.apps.worker", "celery.concurrency.prefork", "kombu",
                "kombu.transport.redis", "kombu.transport.pyamqp", "sqlalchemy", "sqlalchemy.orm", "psycopg",
                "redis", "pydantic", "pydantic_settings", "structlog", "prometheus_client", "rich", "yaml",
                "jinja2", "cryptography.fernet", "aiohttp", "alembic", "playwright.async_api"),
}
FRESH: dict[str, tuple[str, ...]] = {"commands": ("browserq.cli",), "workers": ("browserq",)}


# --- the zygote's side ---------------------------------------------------------------------------
def _preload(kind: str) -> None:
    for name in PRELOAD[kind]:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    for fresh in FRESH[kind]:
        for name in [m for m in sys.modules if m == fresh or m.startswith(fresh + ".")]:
            del sys.modules[name]
        parent, _, child = fresh.rpartition(".")
        if parent and hasattr(sys.modules.get(parent), child):
            delattr(sys.modules[parent], child)


def _serve(listener: socket.socket) -> str:
    """Accept requests until stdin closes; each one is handled in a forked waiter. Returns (in the
    forked process only) the module it is to run."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # waiters are reaped by the kernel
    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in ready and not sys.stdin.buffer.read1(1):
            os._exit(0)
        if listener in ready:
            conn, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                return _wait_for_process(conn)  # returns only in the forked process
            conn.close()


def _wait_for_process(conn: socket.socket) -> str:
    """In the waiter: read the request, fork the process, report its pid and exit status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    request = json.loads(conn.makefile("r").readline())
    pid = os.fork()
    if pid == 0:
        conn.close()
        return _become(request)
    conn.sendall(f"{pid}\n".encode())
    _, status = os.waitpid(pid, 0)
    with contextlib.suppress(OSError):  # the test may have stopped listening
        conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
    conn.close()
    os._exit(0)


def _become(request: dict[str, object]) -> str:
    if request.get("session"):
        os.setsid()  # as subprocess's start_new_session: a group of its own to stop as one
    else:
        os.setpgrp()  # a timeout kills the command and what it started
    os.chdir(str(request["cwd"]))
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    for fd, path, mode in ((0, request["stdin"], os.O_RDONLY), (1, request["stdout"], os.O_WRONLY | os.O_APPEND),
                           (2, request["stderr"], os.O_WRONLY | os.O_APPEND)):
        opened = os.open(str(path), mode)
        os.dup2(opened, fd)
        os.close(opened)
    sys.path[0] = os.getcwd()  # as ``python -m`` puts the working directory first
    module, argv = request["module"], request["argv"]
    assert isinstance(module, str) and isinstance(argv, list)
    sys.argv = [module, *argv]
    return module


def main() -> None:
    path, kind = sys.argv[1], sys.argv[2]
    _preload(kind)
    # As browserq's worker does before its pool forks (browserq/heap.py): the preloaded heap out of
    # the children's cycle collections, so that they neither walk it nor copy its pages.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    module = _serve(listener)
    # Only a forked process gets here: run it as ``python -m MODULE`` would; its exit status is
    # SystemExit's, or 1 after a traceback, through the interpreter's own shutdown.
    import runpy

    runpy.run_module(module, run_name="__main__", alter_sys=True)


# --- the test's side -----------------------------------------------------------------------------
class ForkedProcess:
    """A process forked by a zygote, with the part of :class:`subprocess.Popen` the tests use
    (``pid``, ``args``, ``returncode``, ``poll``, ``wait``, ``send_signal``, ``terminate``, ``kill``).
    Its exit status comes from its waiter over the connection that asked for it."""

    def __init__(self, conn: socket.socket, args: list[str]) -> None:
        self._conn, self._pending = conn, b""
        self.args = args
        self.pid = int(self._line(None) or 0)
        self.returncode: int | None = None
        if not self.pid:
            raise RuntimeError(f"the zygote did not start {args}")

    def _line(self, timeout: float | None) -> str | None:
        """The next line from the waiter; None if none came within ``timeout`` (0: don't wait)."""
        while b"\n" not in self._pending:
            ready, _, _ = select.select([self._conn], [], [], timeout)
            if not ready:
                return None
            chunk = self._conn.recv(64)
            if not chunk:
                raise RuntimeError(f"the zygote lost process {getattr(self, 'pid', '?')}")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode()

    def poll(self) -> int | None:
        if self.returncode is None and (line := self._line(0)) is not None:
            self.returncode = int(line)
            self._conn.close()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            line = self._line(timeout)
            if line is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self.returncode = int(line)
            self._conn.close()
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    """One zygote of a kind per test process, started on first use with ``environment()`` (the
    suite's ``browserq_env``: this process's environment without its own ``BROWSERQ_*``)."""

    def __init__(self, kind: str, environment: Callable[[], dict[str, str]]) -> None:
        self.kind = kind
        self._environment = environment
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._dir = Path(tempfile.mkdtemp(prefix=f"bq_zygote_{kind}_"))
        self._socket = self._dir / "zygote.sock"
        atexit.register(self.stop)

    def _started(self) -> Path:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                with contextlib.suppress(FileNotFoundError):
                    self._socket.unlink()
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "tests.support.zygote", str(self._socket), self.kind],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self._environment(), text=True,
                    cwd=self._dir)
                assert self._process.stdout is not None
                if self._process.stdout.readline().strip() != "ready":
                    raise RuntimeError(f"the {self.kind} zygote did not start")
            return self._socket

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.stdin is not None:
            process.stdin.close()
            process.wait(10)

    def fork(self, module: str, argv: Sequence[str], *, cwd: Path | str, env: Mapping[str, str], stdin: Path | str,
             stdout: Path | str, stderr: Path | str, session: bool, shown_as: list[str]) -> ForkedProcess:
        """``python -m module argv`` forked from this zygote (``session``: in a session of its own,
        else in a process group of its own)."""
        request = {"module": module, "argv": list(argv), "cwd": str(cwd), "env": dict(env), "stdin": str(stdin),
                   "stdout": str(stdout), "stderr": str(stderr), "session": session}
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(str(self._started()))
            conn.sendall((json.dumps(request) + "\n").encode())
            return ForkedProcess(conn, shown_as)
        except BaseException:
            conn.close()
            raise


if __name__ == "__main__":
    main()
