"""When an entry fires: its *slots*, computed with celery's ``schedule`` and ``crontab``.

A slot is an entry's nominal fire time, and every beat computes the same slots from the entry
alone, never from when that beat started: an interval's slots are the multiples of it since
1970-01-01 UTC (``every: 5m`` fires at :00, :05, … UTC), a cron's are the minutes its fields
match in its timezone (celery's ``crontab``, including its handling of DST changes). That is
what lets the slot be part of a fleet-wide idempotency key: two beats, or a beat and its restarted
self, name the same slot the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from celery.schedules import BaseSchedule, ParseException, crontab, schedule

CRON_FIELDS = "minute hour day-of-month month day-of-week"


def utc_now() -> datetime:
    """Now, aware, in UTC (the clock of every schedule object built here)."""
    return datetime.now(UTC)


@dataclass(frozen=True, eq=False)
class Timing:
    """An entry's celery schedule object, its text as written, and the zone its cron counts in."""

    celery: BaseSchedule
    text: str
    zone: tzinfo = UTC

    @property
    def zone_name(self) -> str:
        """The IANA name of the zone (``UTC`` for intervals and for crons without a timezone)."""
        return getattr(self.zone, "key", None) or "UTC"

    @property
    def interval_s(self) -> int | None:
        """Seconds between slots of an ``every`` entry (None for a cron)."""
        if isinstance(self.celery, schedule):
            return int(self.celery.run_every.total_seconds())
        return None

    def next_after(self, moment: datetime) -> datetime:
        """The first slot strictly after ``moment`` (aware, UTC)."""
        step = self.interval_s
        if step is None:
            assert isinstance(self.celery, crontab)
            last, delta, _now = self.celery.remaining_delta(moment, tz=self.zone)
            return (last + delta).astimezone(UTC)
        return datetime.fromtimestamp((int(moment.timestamp() // step) + 1) * step, UTC)

    def first_due(self, now: datetime, after: datetime | None, window_s: float) -> datetime | None:
        """The oldest slot after ``after`` (the last one fired) that is due at ``now`` and at most
        ``window_s`` old; None when nothing is due. Slots older than the window are skipped."""
        lower = now - timedelta(seconds=window_s)
        if after is not None and after > lower:
            lower = after
        slot = self.next_after(lower)
        return slot if slot <= now else None

    def skipped(self, now: datetime, after: datetime | None, window_s: float) -> bool:
        """Whether slots after ``after`` fell out of the catch-up window unfired."""
        return after is not None and self.next_after(after) <= now - timedelta(seconds=window_s)


def slot_key(name: str, slot: datetime) -> str:
    """The idempotency key of entry ``name``'s run for ``slot``: ``schedule:<name>:<UTC slot>``.
    The same for every beat, so a slot fired twice joins the run it already has."""
    return f"schedule:{name}:{slot.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}"


def every_timing(seconds: int, text: str) -> Timing:
    """The timing of ``every: <text>`` (``seconds`` long)."""
    return Timing(schedule(timedelta(seconds=seconds), nowfun=utc_now), f"every {text}")


def cron_timing(expression: str, zone: tzinfo = UTC) -> Timing:
    """The timing of ``cron: <expression>`` in ``zone``; raises ValueError with celery's reason."""
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(
            f"cron {expression!r} must have 5 fields ({CRON_FIELDS}), e.g. \"*/5 * * * *\""
        )
    minute, hour, day_of_month, month, day_of_week = fields
    try:
        cron = crontab(minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month,
                       day_of_week=day_of_week, nowfun=utc_now)
    except (ValueError, ParseException, KeyError, IndexError) as exc:
        raise ValueError(f"cron {expression!r} is not valid ({CRON_FIELDS}): {exc}") from None
    cron.tz = zone  # celery reads the app's timezone otherwise; each entry has its own
    return Timing(cron, f"cron {' '.join(fields)}", zone)


__all__ = ["Timing", "cron_timing", "every_timing", "slot_key", "utc_now"]
