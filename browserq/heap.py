"""The interpreter's heap, put out of the cycle collector's reach where nothing in it will be freed.

browserq's imports (SQLAlchemy, pydantic, Playwright's generated API, Celery, Alembic's scripts)
leave ~160,000 long-lived objects that Python's cycle collector keeps walking, and walks again
while the interpreter shuts down: a process that imported the task package spent ~0.45 CPU-s on
its way out (1.55 CPU-s from start to exit against 1.06 with the heap frozen, 5 runs each,
2026-12-07), and ``browserq runs`` 0.88 CPU-s against 0.63. ``gc.freeze`` moves every object
alive at that moment to a generation no collection visits. Objects are still freed by their
reference counts; only garbage *cycles* among the frozen objects stay — which for imports and
for a process about to exit is nothing lost.
"""

from __future__ import annotations

import atexit
import gc


def freeze_started() -> None:
    """For a long-lived process whose start-up is done (its garbage collected first): a worker's
    parent right before its pool forks — Python's documented pattern: the children's collections
    skip what the parent imported, less CPU per collection and no copy-on-write of those pages
    just to update the collector's counts — and beat. Their exits are cheaper too."""
    gc.collect()
    gc.freeze()


def freeze_on_exit() -> None:
    """For a command-line process: freeze the heap as the last exit handler (handlers run last
    registered first), so the interpreter's shutdown does not walk it. Every other exit handler
    and every flush still runs."""
    atexit.register(gc.freeze)
