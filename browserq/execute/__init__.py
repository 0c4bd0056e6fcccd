"""Durable execution around one run: the lease, identity and tenant slots, the retry decision by
policy, the run's end; process liveness; the batch breaker; the fleet sweeper.

    runtime.py   Runtime: one process's browser pool and store; ``execute(run_id)`` one attempt at a time
    accept.py    what a run must pass to be accepted, and its record (producer, worker, in-process)
    run_request.py  a recorded run rebuilt as the RunRequest of one attempt (stored template, params)
    meters.py    what the runtime's parts report to (the worker's metrics), handed to them
    identity_slots.py  the run's identity leased for an attempt (not the one a rotation left)
    decide.py    the one place an attempt's end becomes a decision, by the error's policy
    finish.py    the run's end: bounded record, lease released; interrupted and crashed executions
    breaker.py   the batch circuit breaker
    liveness.py  ``host:pid:start`` worker names and whether such a holder is dead (/proc)
    sweeper.py   the fleet-wide sweep lock and the sweeper thread inside the workers
    errors.py    RunBusy (WAIT), WorkerUnusable (INFRASTRUCTURE)
"""

from browserq.execute.accept import (
    PreparedRun,
    check_identity_request,
    check_run_options,
    check_template_pin,
    notify_for,
    prepare_loaded,
    prepare_run,
    record_run,
)
from browserq.execute.decide import RetryLater, backoff_s
from browserq.execute.errors import RunBusy, WorkerUnusable
from browserq.execute.liveness import holder_dead, worker_name
from browserq.execute.runtime import Runtime
from browserq.execute.sweeper import FleetSweeper

__all__ = [
    "FleetSweeper",
    "PreparedRun",
    "RetryLater",
    "RunBusy",
    "Runtime",
    "WorkerUnusable",
    "backoff_s",
    "check_identity_request",
    "check_run_options",
    "check_template_pin",
    "holder_dead",
    "notify_for",
    "prepare_loaded",
    "prepare_run",
    "record_run",
    "worker_name",
]
