"""Slots: the same nominal times on every beat, from celery's schedule objects."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from browserq.schedules import slot_key
from browserq.schedules.timing import cron_timing, every_timing


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def test_interval_slots_are_multiples_of_the_interval_since_the_epoch() -> None:
    five = every_timing(300, "5m")
    assert five.next_after(at("2026-01-01T12:03:17+00:00")) == at("2026-01-01T12:05:00+00:00")
    assert five.next_after(at("2026-01-01T12:05:00+00:00")) == at("2026-01-01T12:10:00+00:00")  # strictly after
    seven = every_timing(420, "7m")
    slot = seven.next_after(at("2026-01-01T00:00:00+00:00"))
    assert slot.timestamp() % 420 == 0 and slot.tzinfo is UTC


def test_cron_slots_count_in_the_entrys_timezone_across_dst() -> None:
    berlin = cron_timing("30 2 * * *", ZoneInfo("Europe/Berlin"))
    assert berlin.next_after(at("2026-01-10T12:00:00+00:00")) == at("2026-01-11T01:30:00+00:00")  # CET
    assert berlin.next_after(at("2026-07-10T12:00:00+00:00")) == at("2026-07-11T00:30:00+00:00")  # CEST
    every5 = cron_timing("*/5  *  * * *")
    assert every5.text == "cron */5 * * * *"
    assert every5.next_after(at("2026-01-01T12:05:00+00:00")) == at("2026-01-01T12:10:00+00:00")
    assert every5.next_after(at("2026-01-01T12:04:59.5+00:00")) == at("2026-01-01T12:05:00+00:00")
    weekdays = cron_timing("0 9 * * mon-fri")
    assert weekdays.next_after(at("2026-01-02T10:00:00+00:00")) == at("2026-01-05T09:00:00+00:00")  # Fri → Mon


def test_first_due_fires_each_slot_once_oldest_first_within_the_window() -> None:
    two = every_timing(2, "2s")
    now = at("2026-01-01T12:00:07.5+00:00")
    # a beat that just took the lock (nothing fired yet) catches up the window's slots, oldest first
    assert two.first_due(now, None, window_s=6) == at("2026-01-01T12:00:02+00:00")
    assert two.first_due(now, at("2026-01-01T12:00:02+00:00"), 6) == at("2026-01-01T12:00:04+00:00")
    assert two.first_due(now, at("2026-01-01T12:00:06+00:00"), 6) is None
    # slots older than the window are skipped, and said to be
    old = at("2026-01-01T11:00:00+00:00")
    assert two.first_due(now, old, 6) == at("2026-01-01T12:00:02+00:00")
    assert two.skipped(now, old, 6) and not two.skipped(now, at("2026-01-01T12:00:04+00:00"), 6)


def test_the_slot_key_is_the_entry_name_and_the_utc_slot() -> None:
    slot = datetime(2026, 3, 29, 3, 30, tzinfo=ZoneInfo("Europe/Berlin"))
    assert slot_key("nightly", slot) == "schedule:nightly:2026-03-29T01:30:00Z"
