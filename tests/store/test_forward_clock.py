"""The time rows are stamped with (browserq.store.forward_clock): a clock NTP steps back a little
must not list runs out of order; a clock corrected by hours is believed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from browserq.store import Store, models
from browserq.store.forward_clock import MAX_ABSORBED_STEP_BACK, ForwardClock
from tests.store.helpers import new_run, template

T0 = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
US = timedelta(microseconds=1)


def scripted(*offsets: timedelta) -> Iterator[datetime]:
    return iter(T0 + offset for offset in offsets)


def test_a_small_step_back_and_a_repeated_reading_still_move_forward() -> None:
    readings = scripted(timedelta(0), -timedelta(milliseconds=3), timedelta(0), timedelta(seconds=1))
    clock = ForwardClock(lambda: next(readings))
    assert [clock() for _ in range(4)] == [T0, T0 + US, T0 + 2 * US, T0 + timedelta(seconds=1)]


def test_a_large_correction_is_believed() -> None:
    back = MAX_ABSORBED_STEP_BACK + timedelta(seconds=1)
    readings = scripted(timedelta(0), -back, -back + US)
    clock = ForwardClock(lambda: next(readings))
    assert [clock() for _ in range(3)] == [T0, T0 - back, T0 - back + US]


def test_threads_never_share_an_instant() -> None:
    frozen = ForwardClock(lambda: T0)
    stamps: list[datetime] = []

    def stamp() -> None:
        stamps.extend(frozen() for _ in range(500))

    threads = [threading.Thread(target=stamp) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(stamps)) == 2000 and max(stamps) == T0 + 1999 * US


def test_runs_created_while_the_clock_steps_back_list_newest_first(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What CI once hit: the host's clock stepped back between two enqueues and the later run
    listed after the earlier one (the readings here go 0, 2, 4, 3, 5, 5 ms)."""
    tid = template(store)
    base = datetime.now(UTC)
    readings = iter(base + timedelta(milliseconds=ms) for ms in (0, 2, 4, 3, 5, 5))
    monkeypatch.setattr(models.utcnow, "source", lambda: next(readings))
    created = [new_run(store, tid) for _ in range(6)]
    monkeypatch.undo()
    assert [r.id for r in store.runs.list_runs()] == created[::-1]
