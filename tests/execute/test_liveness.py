"""Worker names and lease-holder liveness, judged from this host's real /proc."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from browserq.execute.liveness import holder_dead, process_start_time, worker_name


def test_a_worker_name_is_host_pid_and_start_time() -> None:
    host, pid, start = worker_name().split(":")
    assert (host, int(pid)) == (socket.gethostname(), os.getpid())
    assert start == process_start_time(os.getpid()) and start.isdigit()


def test_a_live_holder_on_this_host_is_alive() -> None:
    assert not holder_dead(worker_name())


def test_an_exited_process_is_dead_and_a_recycled_pid_is_not_its_holder() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start_time(child.pid)
    child.wait()
    host = socket.gethostname()
    assert holder_dead(f"{host}:{child.pid}:{start or '1'}")
    # a live pid whose start time differs from the holder's: the pid was reused
    assert holder_dead(f"{host}:{os.getpid()}:{int(process_start_time(os.getpid()) or 0) + 1}")


def test_holders_elsewhere_or_unreadable_are_never_judged() -> None:
    assert not holder_dead("another-host:1:1")
    assert not holder_dead(f"{socket.gethostname()}:not-a-pid:1")
    assert not holder_dead("no-colons-at-all")
