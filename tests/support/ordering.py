"""The order xdist's ``worksteal`` hands tests out in: the long ones first, one pile per worker.

Why: ``worksteal`` gives worker *i* the *i*-th contiguous slice of the collection and lets an idle
worker steal the *tail* of a busy one's queue. Collected in path order, the first slice held every
long test (chaos, the driver matrix, durability: minutes each, mostly waiting on a worker, an
outage or a browser) and ran them one after another at its head, where stealing never reaches, so
that worker set the suite's end. Here the long tests are dealt out to the slices (longest first,
each to the slice with the least long work so far) and put at their heads, so every worker starts
on one at once and their waits overlap; every other test keeps its place and its module's
neighbours. Every worker computes the same order from the same collection, as xdist requires.

The weights are rough seconds on the 2-core machine (``--durations`` in CI's output); only their
order matters. A new long family gets a line in ``LONG_TESTS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

Item = TypeVar("Item")

#: Node-id prefixes of the long tests and their rough seconds; the longest matching prefix wins.
LONG_TESTS: dict[str, float] = {
    "tests/chaos/": 60,
    "tests/chaos/test_database_long_outage.py": 370,
    "tests/chaos/test_worker_kills.py::test_sigkill_a_worker_child_every_two_seconds": 145,
    "tests/drivers/test_matrix.py::test_every_action_test_passes_under_each_fork": 150,
    "tests/durability/": 20,
}


def weight(nodeid: str, table: dict[str, float] = LONG_TESTS) -> float:
    """The rough seconds of the test ``nodeid`` (0 for one not listed as long)."""
    matches = [prefix for prefix in table if nodeid.startswith(prefix)]
    return table[max(matches, key=len)] if matches else 0.0


def slice_sizes(total: int, workers: int) -> list[int]:
    """The sizes of the slices xdist's ``worksteal`` first sends, in order (its own arithmetic)."""
    sizes = []
    for i in range(workers):
        size = total // (workers - i)
        sizes.append(size)
        total -= size
    return sizes


def long_tests_first(items: Sequence[Item], nodeids: Sequence[str], workers: int) -> list[Item]:
    """``items`` reordered so each of the ``workers`` slices starts with its share of the long
    tests; the input order when there is one worker, no long test, or a slice too small."""
    weights = [weight(nodeid) for nodeid in nodeids]
    long = sorted((i for i, w in enumerate(weights) if w > 0), key=lambda i: -weights[i])
    if workers < 2 or not long:
        return list(items)
    sizes = slice_sizes(len(items), workers)
    piles: list[list[int]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for index in long:
        target = min(range(workers), key=lambda w: (loads[w], len(piles[w])))
        piles[target].append(index)
        loads[target] += weights[index]
    if any(len(pile) > size for pile, size in zip(piles, sizes, strict=True)):
        return list(items)
    rest = iter(i for i, w in enumerate(weights) if w == 0)
    order: list[int] = []
    for pile, size in zip(piles, sizes, strict=True):
        order.extend(pile)
        order.extend(next(rest) for _ in range(size - len(pile)))
    return [items[i] for i in order]
