"""Imported into a test worker with ``celery worker --include tests.support.noisy_worker``: while a
task runs, its pool child prints what libraries and careless code print — a stray ``print``, a
partial line, a Python warning, a thread's uncaught exception — so a test can see how each
reaches the worker's output."""

from __future__ import annotations

import sys
import threading
import warnings
from typing import Any

from celery.signals import task_prerun

print("noisy: imported")  # at import, in the worker's parent


class NoisyWarning(UserWarning):
    """What the test's warning is (the category the JSON line names)."""


def _fail() -> None:
    raise RuntimeError("noisy: a thread failed")


@task_prerun.connect
def _noise(**_: Any) -> None:
    print("noisy: a stray print")
    sys.stderr.write("noisy: a partial ")
    sys.stderr.write("line on stderr\n")
    warnings.warn("noisy: a library warning", NoisyWarning, stacklevel=1)
    thread = threading.Thread(target=_fail, name="noisy")
    thread.start()
    thread.join()
