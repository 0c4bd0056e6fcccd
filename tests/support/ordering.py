"""The longest tests first, each at the head of a different xdist worker's share.

Why: with ``--dist worksteal`` pytest-xdist deals the collected tests out in contiguous shares, one
per worker, and an idle worker later steals the *tail* of the busiest one's queue. A test is never
taken from a worker once it runs, so a long test dealt late sets the end of the run: the database
long outage (~320 s, mostly waiting) started at minute 9 of a 15-minute run and its worker finished
~90 s after the other three (bench/README.md, "The longest tests first"). Dealt first, each long
test runs while the other workers get through their shares, and stealing evens out the rest.

:data:`LONGEST` names them with their wall time measured under ``bench/suite_cpu.py``; they are
spread over the shares longest first, each to the share with the least long work so far, and put at
its head. The other tests keep their collection order. ``tests/test_support.py`` checks that every
name still matches a test and that xdist's own scheduler deals them as planned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

#: Node-id prefixes of the tests that run longest → their wall seconds (``bench/suite_cpu.py``,
#: 2026-12-07, 4 workers). A prefix without ``[...]`` takes every parametrization of the test.
LONGEST: dict[str, float] = {
    "tests/chaos/test_database_long_outage.py::test_long_outages_and_a_stalled_connection_are_ridden_out": 323,
    "tests/drivers/test_matrix.py::test_every_action_test_passes_under_each_fork[patchright-actions]": 70,
    "tests/drivers/test_matrix.py::test_every_action_test_passes_under_each_fork[rebrowser-actions]": 61,
    "tests/drivers/test_matrix.py::test_every_action_test_passes_under_each_fork[rebrowser-stealth-evidence]": 55,
    "tests/chaos/test_worker_kills.py::test_sigkill_a_worker_child_every_two_seconds": 46,
    "tests/sessions/test_session_handoff.py::test_a_handoff_whose_worker_dies_is_asked_again_on_the_next_holder": 45,
    "tests/chaos/test_broker_restarts.py::test_rabbitmq_restart_loses_nothing": 41,
    "tests/chaos/test_half_open_broker.py::test_worker_recovers_from_a_half_open_broker_connection_without_a_restart": 35,
    "tests/runner/test_runaway.py::test_every_action_on_a_busy_page_ends_at_its_timeout": 33,
    "tests/secrets/test_everywhere.py::test_a_secret_appears_in_no_form_in_anything_browserq_writes": 30,
    "tests/chaos/test_broker_restarts.py::test_redis_restart_loses_queued_messages_the_sweeper_resends_them": 30,
}


class HasNodeId(Protocol):
    @property
    def nodeid(self) -> str: ...


Item = TypeVar("Item", bound=HasNodeId)


def first_shares(count: int, workers: int) -> list[int]:
    """How many of ``count`` tests each worker is dealt at the start: worksteal gives each idle
    worker in turn ``len(pending) // workers_left`` (``WorkStealingScheduling.check_schedule``)."""
    sizes = []
    left = count
    for i in range(workers):
        size = left // (workers - i)
        sizes.append(size)
        left -= size
    return sizes


def expected_wall(nodeid: str, longest: Mapping[str, float] = LONGEST) -> float | None:
    """The measured wall time of the test ``nodeid`` when :data:`LONGEST` names it."""
    for prefix, seconds in longest.items():
        if nodeid == prefix or nodeid.startswith(prefix + "["):
            return seconds
    return None


def longest_first(items: Sequence[Item], workers: int, longest: Mapping[str, float] = LONGEST) -> list[Item]:
    """``items`` reordered so that the long ones head the workers' first shares, spread longest
    first over the share with the least long work; with one worker (or none) simply first."""
    timed = [(seconds, index) for index, item in enumerate(items)
             if (seconds := expected_wall(item.nodeid, longest)) is not None]
    if not timed:
        return list(items)
    timed.sort(key=lambda pair: (-pair[0], pair[1]))
    sizes = first_shares(len(items), max(workers, 1))
    heads: list[list[int]] = [[] for _ in sizes]
    load = [0.0 for _ in sizes]
    for seconds, index in timed:
        open_shares = [s for s in range(len(sizes)) if len(heads[s]) < sizes[s]]
        share = min(open_shares, key=lambda s: (load[s], s))
        heads[share].append(index)
        load[share] += seconds
    placed = {index for head in heads for index in head}
    rest = iter(index for index in range(len(items)) if index not in placed)
    order: list[int] = []
    for head, size in zip(heads, sizes, strict=True):
        order += head
        order += [next(rest) for _ in range(size - len(head))]
    return [items[index] for index in order]
