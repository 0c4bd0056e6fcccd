"""The step timeline drawn to scale: x is the time since the run started, one row per step,
one bar per attempt of it (a retry is a second bar on the same row, a run-level retry too).

Pure arithmetic on the step records, so the geometry is tested without a browser.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from browserq.report.model import Bar, Row, StepLine, Tick, Timeline
from browserq.store.views import event_text

#: At most this many ticks on the time axis (plus the origin).
MAX_TICKS = 8
#: Tick spacings people read at a glance: 1-2-5 below a second, then whole seconds, minutes, hours.
NICE_STEPS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000,
                 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000,
                 10_800_000, 21_600_000, 43_200_000, 86_400_000)
#: Bars narrower than this (% of the run) carry no text inside: the hover title still has it.
LABEL_MIN_PCT = 7.0


def duration_text(ms: float | None) -> str:
    """A duration for people: ``840 ms``, ``3.2 s``, ``2 min 05 s``."""
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 120_000:
        return f"{ms / 1000:.1f} s" if ms < 10_000 else f"{ms / 1000:.0f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds:02d} s"


def span(run: Any, steps: Sequence[Any], now: datetime) -> tuple[datetime | None, datetime | None]:
    """Where the timeline starts and ends: the run's start (or its first step's, whichever is
    earlier — a retried run restarts its clock) to the last thing that happened."""
    starts = [s.started_at for s in steps] + ([run.started_at] if run.started_at else [])
    if not starts:
        return None, None
    ends = [_end_of(s, None) for s in steps] + [run.finished_at]
    known = [e for e in ends if e is not None]
    end = max(known) if known and run.finished_at is not None else max([*known, now])
    return min(starts), max(end, min(starts))


def _end_of(step: Any, fallback: datetime | None) -> datetime | None:
    if step.finished_at is not None:
        return step.finished_at
    if step.duration_ms is not None:
        return step.started_at + timedelta(milliseconds=step.duration_ms)
    return fallback


def build_timeline(run: Any, steps: Sequence[Any], now: datetime) -> Timeline:
    """Rows of bars in % of the run's span, and the ticks of its time axis."""
    origin, end = span(run, steps, now)
    if origin is None or end is None:
        return Timeline(rows=(), ticks=(), total_ms=0.0)
    total_ms = max((end - origin).total_seconds() * 1000, 1.0)
    rows: dict[str, list[Any]] = {}
    for step in steps:
        rows.setdefault(step.step_path, []).append(step)
    built = []
    for path, attempts in rows.items():
        first = attempts[0]
        bars = tuple(_bar(s, origin, end, total_ms, retried=len(attempts) > 1) for s in attempts)
        built.append(Row(step_path=path, name=first.step_id or first.action, action=first.action, bars=bars))
    return Timeline(rows=tuple(built), ticks=ticks(total_ms), total_ms=total_ms)


def _bar(step: Any, origin: datetime, end: datetime, total_ms: float, *, retried: bool) -> Bar:
    finish = _end_of(step, end) or end
    left = (step.started_at - origin).total_seconds() * 1000
    width = max((finish - step.started_at).total_seconds() * 1000, 0.0)
    left_pct = min(max(left / total_ms * 100, 0.0), 100.0)
    width_pct = min(width / total_ms * 100, 100.0 - left_pct)
    tries = f"try {step.attempt}" + (f" · run {step.run_attempt}" if step.run_attempt > 1 else "")
    title = [f"{step.step_path} {step.step_id or ''} · {step.action}".replace("  ", " "),
             f"{tries} · {step.status} · {duration_text(step.duration_ms)}",
             f"started {offset_text(left)} after the run"]
    if step.error_code:
        title.append(f"{step.error_code}: {step.error_message or ''}")
    label = f"{tries} · {duration_text(step.duration_ms)}" if retried else duration_text(step.duration_ms)
    return Bar(status=step.status, left_pct=round(left_pct, 3), width_pct=round(width_pct, 3),
               label=label if width_pct >= LABEL_MIN_PCT else "", title="\n".join(title))


def offset_text(ms: float) -> str:
    """An offset from the run's start: ``+0.42 s``."""
    return f"+{ms / 1000:.2f} s"


def ticks(total_ms: float) -> tuple[Tick, ...]:
    """Round ticks (the first of NICE_STEPS_MS that keeps them at most MAX_TICKS after the origin)."""
    raw = total_ms / MAX_TICKS
    step = next((m for m in NICE_STEPS_MS if m >= raw), None)
    if step is None:  # over a day: whole hours
        step = math.ceil(raw / 3_600_000) * 3_600_000
    count = int(total_ms // step)
    return tuple(Tick(left_pct=round(i * step / total_ms * 100, 3), label=tick_text(i * step))
                 for i in range(count + 1))


def tick_text(ms: float) -> str:
    if ms == 0:
        return "0"
    if ms < 1000:
        return f"{ms:g} ms"
    if ms < 120_000:
        return f"{ms / 1000:g} s"
    if ms < 3 * 3_600_000:
        return f"{ms / 60_000:g} min"
    return f"{ms / 3_600_000:g} h"


def step_lines(steps: Sequence[Any], origin: datetime | None) -> tuple[StepLine, ...]:
    """The table under the timeline: every attempt with its offset, error and warnings."""
    lines = []
    for s in steps:
        start = offset_text((s.started_at - origin).total_seconds() * 1000) if origin else ""
        lines.append(StepLine(
            step_path=s.step_path, step_id=s.step_id or "", action=s.action, attempt=s.attempt,
            run_attempt=s.run_attempt, status=s.status, start=start, duration=duration_text(s.duration_ms),
            error=f"{s.error_code}: {s.error_message or ''}" if s.error_code else "",
            warnings=tuple(f"{w.get('code')}: {w.get('message')}" for w in s.warnings or []),
            url_after=s.url_after or "",
            events=tuple(event_text(e) for e in getattr(s, "events", None) or []),
        ))
    return tuple(lines)
