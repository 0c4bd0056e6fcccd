"""browserq's celery beat scheduler (``beat_scheduler`` of the browserq app).

It keeps celery's own entries — the app's ``beat_schedule`` with the sweeper's
``browserq-sweep`` — and adds one :class:`RunEntry` per enabled entry of the schedules file,
checked completely before beat ticks once (a bad file stops this process, exit code 2, one line
per problem). Every tick first holds the fleet-wide :class:`~browserq.schedules.lock.BeatLock`:
a beat without it is a standby and fires nothing, not even the sweeper.

A run entry is due at its slots (:mod:`browserq.schedules.timing`). Each due slot is fired once,
oldest first, through the producer (:func:`~browserq.schedules.fire.fire_logged`), keyed by the
slot. When a beat takes the lock (at start, or taking over from a beat that died) it fires the
slots of the last ``2 × BROWSERQ_BEAT_LOCK_TTL_S`` too, the window in which a dead holder may
have left a slot unfired; slots the holder did fire join their runs. Older slots are skipped,
with a warning. Nothing is persisted: slots are computed from the entry and the clock alone, so
the schedule file of ``PersistentScheduler`` is neither needed nor written.
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

import structlog
from celery.beat import ScheduleEntry, Scheduler
from celery.schedules import schedstate

from browserq.redact import redact_url
from browserq.schedules.check import check_schedules
from browserq.schedules.fire import fire_logged
from browserq.schedules.lock import BeatLock, Hold, beat_lock_url
from browserq.schedules.model import Schedule
from browserq.schedules.timing import utc_now
from browserq.settings import Settings, get_settings

log = structlog.get_logger(__name__)

#: What a run entry shows as its task in celery's logs (its runs are ``browserq.run_template``).
RUN_TASK = "browserq.run_template"


class RunEntry(ScheduleEntry):
    """One schedules-file entry inside celery's schedule: due at its slots, fired by beat."""

    def __init__(self, spec: Schedule, *, app: Any, window_s: float, last_slot: datetime | None = None,
                 total_run_count: int = 0) -> None:
        self.spec, self.window_s, self.last_slot = spec, window_s, last_slot
        self.due_slot: datetime | None = None
        super().__init__(name=spec.name, task=RUN_TASK, schedule=spec.timing.celery, app=app,
                         last_run_at=last_slot, total_run_count=total_run_count)

    def default_now(self) -> datetime:
        return utc_now()

    def is_due(self) -> schedstate:
        """Due when a slot after the last fired one has come (within the catch-up window)."""
        now, timing = utc_now(), self.spec.timing
        self.due_slot = timing.first_due(now, self.last_slot, self.window_s)
        upcoming = timing.next_after(self.due_slot or now)
        return schedstate(self.due_slot is not None, max(0.0, (upcoming - now).total_seconds()))

    def _next_instance(self, last_run_at: Any = None) -> RunEntry:
        return RunEntry(self.spec, app=self.app, window_s=self.window_s,
                        last_slot=self.due_slot or self.last_slot, total_run_count=self.total_run_count + 1)

    __next__ = next = _next_instance


class BrowserqScheduler(Scheduler):
    """celery's in-memory scheduler, plus the schedules file, behind the fleet-wide lock."""

    def __init__(self, app: Any, *args: Any, **kwargs: Any) -> None:
        self.lock: BeatLock | None = None
        super().__init__(app, *args, **kwargs)
        # renew the lock (or, on standby, try to take it) at least every third of its TTL
        self.max_interval: float = min(self.max_interval, get_settings().beat_lock_ttl_s / 3)

    def setup_schedule(self) -> None:
        super().setup_schedule()  # celery's defaults and the app's beat_schedule (the sweeper)
        settings = get_settings()
        window_s = 2 * settings.beat_lock_ttl_s
        schedules = load_for_beat(settings, reserved=set(self.schedule))
        for spec in schedules:
            self.schedule[spec.name] = RunEntry(spec, app=self.app, window_s=window_s)
        self.lock = BeatLock.from_settings(settings)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """Fire what is due, but only while this beat holds the lock (renewed here, each tick)."""
        assert self.lock is not None
        state = self.lock.hold()
        if state is Hold.STANDBY:
            return self.lock.poll_interval_s
        if state is Hold.ACQUIRED:  # the previous holder may have left slots of the window unfired
            for entry in self.schedule.values():
                if isinstance(entry, RunEntry):
                    entry.last_slot = None
            self._heap = None
        return super().tick(*args, **kwargs)

    def apply_entry(self, entry: ScheduleEntry, producer: Any = None) -> None:
        if not isinstance(entry, RunEntry):
            super().apply_entry(entry, producer=producer)
            return
        slot, previous = entry.due_slot, entry.last_slot
        if slot is None:
            return
        if previous is not None and entry.spec.timing.next_after(previous) < slot:
            log.warning("schedule slots skipped: older than the catch-up window", schedule=entry.name,
                        after=previous.isoformat(), next_fired=slot.isoformat(), window_s=entry.window_s)
        fire_logged(entry.spec, slot)

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.lock is not None:
                self.lock.release()

    @property
    def info(self) -> str:
        settings = get_settings()
        url = redact_url(beat_lock_url(settings))
        source = settings.schedules_file or "(no BROWSERQ_SCHEDULES_FILE)"
        return (f"    . schedules -> {source}\n"
                f"    . beat lock -> {url} browserq:beat-lock:{settings.queue} "
                f"(ttl {settings.beat_lock_ttl_s:g} s)")


def load_for_beat(settings: Settings, reserved: set[str]) -> list[Schedule]:
    """The enabled entries of the schedules file, checked with the producer's own registry;
    a file with problems stops the process (exit code 2) with one line per problem."""
    if settings.schedules_file is None:
        return []
    from browserq.celery_app import producer_services

    services = producer_services()
    checked = check_schedules(settings.schedules_file, services.registry, services.secret_box,
                              settings=settings, reserved=reserved)
    if checked.problems:
        for problem in checked.problems:
            print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    log.info("schedules loaded", file=str(settings.schedules_file), enabled=len(checked.ready),
             disabled=len(checked.disabled))
    return checked.ready


__all__ = ["BrowserqScheduler", "RunEntry", "load_for_beat"]
