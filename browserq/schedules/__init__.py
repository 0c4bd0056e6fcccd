"""Scheduled template runs: a YAML file of entries, fired by exactly one beat across the fleet.

    model.py      an entry (pydantic, extra=forbid): template, params, every/cron, timezone, queue
    timing.py     slots: the nominal fire times, from celery's schedule/crontab, the same on every beat
    load.py       the file → entries, every problem of its shape in one line (file, line, entry)
    refs.py       {env: VAR} / {file: /path} param references, resolved at each fire
    check.py      entries against their templates, as the producer will check each fire
    fire.py       one slot → run_template.apply_async(…, idempotency_key="schedule:<name>:<slot>")
    lock.py       the fleet-wide Redis lock: only its holder fires
    scheduler.py  the celery beat scheduler that puts them together (the app's beat_scheduler)

docs/operating.md § "Schedules" describes the file and how beat runs.
"""

from browserq.schedules.check import Checked, check_schedules
from browserq.schedules.load import Loaded, Problem, read_schedules
from browserq.schedules.model import EnvRef, FileRef, Schedule
from browserq.schedules.timing import Timing, slot_key

__all__ = [
    "Checked",
    "EnvRef",
    "FileRef",
    "Loaded",
    "Problem",
    "Schedule",
    "Timing",
    "check_schedules",
    "read_schedules",
    "slot_key",
]
