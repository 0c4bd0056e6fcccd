"""Firing one slot of an entry: submit its run through the producer, keyed by the slot.

Beat submits the run itself, with ``run_template.apply_async`` — the producer's path, so the
template is resolved, the params validated, the run recorded (secrets encrypted) and only then
sent, exactly as for any caller. Submitting from beat rather than from a worker task:

* the slot is known exactly where it is computed; a worker would have to reconstruct it from
  when a message arrived;
* references resolve where the file was checked (the beat host's environment and files); a
  worker task would need the schedules file and every secret on every worker;
* a slot that cannot be submitted (template changed, broker down) is one ERROR line in beat's
  log, and the next slot is tried again; nothing half-sent waits in a queue.

The key ``schedule:<name>:<slot>`` makes a second fire of the same slot (two beats, a restarted
beat, a takeover catching up) join the run the first one recorded instead of creating another.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import structlog

from browserq.errors import ParamError
from browserq.schedules.model import Schedule
from browserq.schedules.refs import concealed_error, resolved_params
from browserq.schedules.timing import slot_key

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Fired:
    """What a fire did: the run that has the slot, and whether this fire created it."""

    run_id: str
    key: str
    joined: bool


def fire(schedule: Schedule, slot: datetime) -> Fired:
    """Submit ``schedule``'s run for ``slot``, or join the run the slot already has.

    Raises what the producer raises (``ParamError``, ``TemplateError``, ``BrokerUnavailable``,
    ``ConfigError`` …) when the run cannot be submitted.
    """
    from browserq.celery_app import producer_services, run_template  # the producer, installed

    key = slot_key(schedule.name, slot)
    existing = producer_services().store.runs.find_run_by_idempotency_key(key)
    if existing is not None:
        return Fired(existing.id, key, joined=True)
    options = {"queue": schedule.queue} if schedule.queue else {}
    params = resolved_params(schedule)
    try:
        result = run_template.apply_async(
            args=[schedule.template], kwargs={"params": params, "idempotency_key": key}, **options
        )
    except ParamError as exc:  # it may quote a referenced value: beat's log never shows one
        raise concealed_error(schedule, params, exc) from None
    return Fired(result.id, key, joined=False)


def fire_logged(schedule: Schedule, slot: datetime) -> Fired | None:
    """:func:`fire`, logged in one line either way (beat goes on with the next slot)."""
    from browserq.errors import BrowserqError

    try:
        fired = fire(schedule, slot)
    except BrowserqError as exc:  # expected refusals: one line, no traceback
        log.error("schedule slot not submitted", schedule=schedule.name, slot=slot.isoformat(),
                  error=type(exc).__name__, reason=" ".join(str(exc).split()))
        return None
    except Exception:  # a bug or a foreign error: with its traceback, beat keeps ticking
        log.exception("schedule slot not submitted", schedule=schedule.name, slot=slot.isoformat())
        return None
    if fired.joined:
        log.info("schedule slot already has its run", schedule=schedule.name, slot=slot.isoformat(),
                 run_id=fired.run_id)
    else:
        log.info("schedule slot submitted", schedule=schedule.name, slot=slot.isoformat(),
                 run_id=fired.run_id, template=schedule.template)
    return fired


__all__ = ["Fired", "fire", "fire_logged"]
