"""The heap is frozen where browserq's processes can spare the cycle collector (browserq/heap.py):
a command on its way out, a prefork worker's parent before it forks, beat once started."""

from __future__ import annotations

import subprocess
import sys

from celery.signals import beat_init, worker_init

from browserq.tasks import signals
from tests.support import REPO
from tests.support.workers import browserq_env

#: Registered before ``main()`` registers its own: exit handlers run last-registered first, so this
#: one runs after browserq's and sees what it left.
PROBE = """
import atexit, gc, sys
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))
from browserq.cli import main
sys.argv = ["browserq", "settings"]
main()
"""


def test_a_command_freezes_its_heap_as_its_last_exit_handler() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=browserq_env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("frozen at exit: True"), done.stdout[-500:]


def _browserq_receivers(signal: object) -> list[str]:
    return [receiver().__name__ for _, receiver in signal.receivers  # type: ignore[attr-defined]  # Celery's Signal is untyped
            if getattr(receiver(), "__module__", "") == signals.__name__]


def test_a_worker_freezes_its_heap_before_the_fork_after_migrating_and_beat_once_started() -> None:
    names = _browserq_receivers(worker_init)
    assert names[-1] == "_freeze_before_fork", names
    assert names.index("_migrate_before_fork") < names.index("_freeze_before_fork")
    assert _browserq_receivers(beat_init) == ["_freeze_beat"]
