"""A virtual X display for headful Chromium on a machine without one (``BROWSERQ_HEADLESS=false``).

Headful Chromium is the real browser: no ``HeadlessChrome`` anywhere, so no ``--user-agent``
override is needed and Chrome reports every client hint itself, in every frame and worker
(``browserq/stealth/README.md`` has what it closes and what it costs). On a server there is no
display: the first headful launch of a worker process starts one ``Xvfb`` (Debian: ``apt install
xvfb``) on a free display number it picks itself (``-displayfd``), used by every later launch of
that process and stopped with it — even by SIGKILL (the parent-death signal).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

from browserq.browsers.errors import BrowserLaunchFailed

#: The virtual screen: as large as the largest identity's screen (stealth.fingerprint).
SCREEN = "2560x1440x24"
START_TIMEOUT_S = 10.0

_lock = threading.Lock()
_xvfb: subprocess.Popen[bytes] | None = None
_display: str | None = None


def display_for_headful() -> str | None:
    """The ``DISPLAY`` a headful browser should use: the process's own, else a started Xvfb."""
    if os.environ.get("DISPLAY"):
        return None  # Chromium inherits it
    global _xvfb, _display
    with _lock:
        if _xvfb is not None and _xvfb.poll() is None and _display:
            return _display
        _xvfb, _display = _start_xvfb()
        return _display


def _die_with_parent() -> None:  # runs in the child between fork and exec (Linux)
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("Xvfb")
    if binary is None:
        raise BrowserLaunchFailed(
            "BROWSERQ_HEADLESS=false needs a display: set DISPLAY, or install Xvfb "
            "(Debian/Ubuntu: apt install xvfb) and browserq starts one"
        )
    read_fd, write_fd = os.pipe()
    process = subprocess.Popen(
        [binary, "-displayfd", str(write_fd), "-screen", "0", SCREEN, "-nolisten", "tcp", "-nocursor", "-noreset"],
        pass_fds=(write_fd,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent,
    )
    os.close(write_fd)
    # The read end stays open while Xvfb runs: Xvfb treats a failed write to it as fatal
    # ("Cannot write display number to fd"), which closing it early caused in 1 start of 6.
    atexit.register(_stop, process, read_fd)
    number = _read_display_number(read_fd, process)
    return process, f":{number}"


def _read_display_number(read_fd: int, process: subprocess.Popen[bytes]) -> str:
    """Xvfb writes the display number it chose, then a newline, once it accepts clients."""
    ready, _, _ = select.select([read_fd], [], [], START_TIMEOUT_S)
    number = os.read(read_fd, 64).decode().strip() if ready else ""
    deadline = time.monotonic() + START_TIMEOUT_S
    while number.isdigit() and process.poll() is None and not _accepts_clients(number):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)  # the number can come before the server answers (measured: 1 launch in 5)
    if not number.isdigit() or process.poll() is not None or not _accepts_clients(number):
        _stop(process)
        raise BrowserLaunchFailed(f"Xvfb did not start within {START_TIMEOUT_S:.0f} s (exit code {process.poll()})")
    return number


def _accepts_clients(number: str) -> bool:
    """Whether the X server on ``:number`` completes a connection setup (what Chromium does first)."""
    setup = struct.pack("<cxHHHHxx", b"l", 11, 0, 0, 0)  # little-endian, X11.0, no authorization
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(1.0)
            conn.connect(f"/tmp/.X11-unix/X{number}")
            conn.sendall(setup)
            return conn.recv(1) == b"\x01"  # 1: Success
    except OSError:
        return False


def _stop(process: subprocess.Popen[bytes], read_fd: int | None = None) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
    if read_fd is not None:
        with contextlib.suppress(OSError):
            os.close(read_fd)
