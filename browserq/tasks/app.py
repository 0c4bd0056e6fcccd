"""The Celery app, its configuration, and the time limits every run message carries.

The configuration is derived from browserq's settings when Celery first reads it (never at import
time); docs/workers.md lists each setting and why.
"""

from __future__ import annotations

import socket
from typing import Any

from celery import Celery

from browserq.queues import sweep_queue, webhook_queue
from browserq.settings import Settings, get_settings
from browserq.store.answering import DbTimeouts, celery_engine_callback

TASK_NAME = "browserq.run_template"
SWEEP_TASK_NAME = "browserq.sweep"
WEBHOOK_TASK_NAME = "browserq.deliver_webhook"
#: Seconds between Celery's soft limit (the run is interrupted and recorded) and the hard kill.
HARD_LIMIT_GRACE_S = 30


def time_limits(timeout_s: float, settings: Settings, *, human_wait_s: float = 0.0) -> dict[str, float]:
    """Celery's ``soft_time_limit`` / ``time_limit`` for a run whose template allows ``timeout_s``:
    the soft limit leaves the run time to record itself, the hard one kills a process that hangs.
    ``human_wait_s``: the run's handoff budget — time spent waiting for a person does not count
    against ``timeout_s``, so the task's limits must leave room for it."""
    soft = timeout_s + human_wait_s + settings.run_time_limit_margin_s
    return {"soft_time_limit": soft, "time_limit": soft + HARD_LIMIT_GRACE_S}


def celery_config(settings: Settings) -> dict[str, Any]:
    """Celery settings derived from browserq's; see docs/workers.md."""
    return {
        "broker_url": settings.broker_url,
        "result_backend": settings.effective_result_backend,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_default_queue": settings.queue,
        # Durability: ack after the run, requeue when the worker process dies, one task per child.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        # Redis redelivers unacked messages after this, even while they still run (celery#5935):
        # keep it far above the longest run. The rest: transport_health().
        "broker_transport_options": {"visibility_timeout": 6 * 3600, **transport_health(settings)},
        # Flower: task events, started state, args of the (redacted) request. The result backend
        # gets two writes per delivery: STARTED (what AsyncResult.state shows while the run runs;
        # Flower takes it from the task-started event) and the end (SUCCESS, FAILURE with
        # RunFailed, REVOKED or RETRY), args included in the same rows (result_extended), and
        # between them at most one PROGRESS per step, throttled (browserq.tasks.progress).
        "worker_send_task_events": True,
        "task_send_sent_event": True,
        "task_track_started": True,
        "result_extended": True,
        "result_expires": 7 * 24 * 3600,
        # The browser launch happens in worker_process_init: give it time.
        "worker_proc_alive_timeout": 90,
        "broker_connection_retry_on_startup": True,
        # A producer facing a dead broker fails within seconds instead of hanging.
        "task_publish_retry_policy": {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
        "broker_connection_timeout": 4,
        "worker_hijack_root_logger": False,
        # stdout/stderr stay the process's own: a log line is never re-logged as a WARNING with
        # Celery's "[time: LEVEL/ForkPoolWorker-N]" prefix (browserq.logs renders every line).
        "worker_redirect_stdouts": False,
        # The sweeper: re-enqueues runs whose worker vanished or whose message was lost.
        # On its own queue, so a sweep never waits behind a backlog of runs (the backlog may be
        # what it has to rescue); a sweep not taken within one interval is dropped.
        "task_routes": {
            SWEEP_TASK_NAME: {"queue": sweep_queue(settings)},
            WEBHOOK_TASK_NAME: {"queue": webhook_queue(settings)},
        },
        "beat_schedule": {
            "browserq-sweep": {
                "task": SWEEP_TASK_NAME,
                "schedule": settings.sweep_interval_s,
                "options": {"expires": settings.sweep_interval_s},
            },
        },
        # Beat: the entries above plus BROWSERQ_SCHEDULES_FILE, fired only by the beat holding
        # the fleet-wide lock (docs/operating.md § Schedules). Named by string: beat alone imports it.
        "beat_scheduler": "browserq.schedules.scheduler:BrowserqScheduler",
        **connection_health(settings),
        # The database result backend gets the run store's limits: a silent connection is dropped.
        "database_engine_callback": celery_engine_callback(DbTimeouts.from_settings(settings)),
        # Its one engine per task process (pooled_result_engine) checks a connection before use,
        # so one that died with the database (an outage, a failover) is replaced, not failed on.
        "database_engine_options": {"pool_pre_ping": True},
    }


def pooled_result_engine(app: Any) -> None:
    """Make the database result backend of this thread keep one engine, with a pool.

    Celery's backend builds a new engine (``NullPool``: a new PostgreSQL connection and a new
    dialect that initialises itself) for every state it stores unless its session manager was
    told of a fork (celery#3032), and Celery gives each *thread* its own backend. A prefork child's
    task thread was told; the progress writer thread of the child, and every thread of a
    ``--pool threads`` worker, were not: the writer connected anew for every PROGRESS state and
    a child kept one more live engine (dialect, compiled statements, type caches) every few runs
    (bench/soak_memory.py --diagnose). Called in each thread that stores states (``task_prerun``,
    the progress writer), never in a producer, which may fork after using it."""
    manager = getattr(app.backend, "session_manager", None)  # only the database backend has one
    if manager is not None and not manager.forked:
        manager._after_fork()  # what multiprocessing's hook would have called (celery#3032)


def connection_health(settings: Settings) -> dict[str, Any]:
    """Celery settings that bound how long a silent connection (no FIN, no RST: a NAT or load
    balancer that lost its state, a frozen host) can hold a worker or a producer: within about
    ``3 × BROWSERQ_BROKER_HEARTBEAT_S`` it is dropped and opened again. Without them a worker waits
    on it forever and every run sent afterwards stays queued (docs/workers.md)."""
    beat = settings.broker_heartbeat_s
    return {
        # RabbitMQ: AMQP heartbeats, checked every beat / 3; two beats missed → reconnect.
        "broker_heartbeat": beat,
        "broker_heartbeat_checkrate": 3.0,
        # The Redis result backend, the same bounds; its reads and writes are safe to repeat.
        "redis_socket_timeout": beat / 2,
        "redis_socket_connect_timeout": beat,
        "redis_socket_keepalive": True,
        "redis_backend_health_check_interval": _half(beat),
        "redis_retry_on_timeout": True,
    }


def transport_health(settings: Settings) -> dict[str, Any]:
    """The broker transport's options for the same bound: RabbitMQ's, else Redis's."""
    if settings.broker_url.split("://", 1)[0] in ("amqp", "amqps", "pyamqp"):
        return amqp_transport_health(settings)
    return redis_transport_health(settings)


def amqp_transport_health(settings: Settings) -> dict[str, Any]:
    """py-amqp's options: heartbeats guard only the worker's consuming connection (nobody checks
    a producer's), and a publish is a write that never waits for an answer, so on a silent
    connection it would be lost without an error. Publisher confirms make it wait for the broker's
    ack and ``read_timeout`` bounds that wait (and a declare's): the send then fails and is retried
    on a new connection (``task_publish_retry_policy``). A live broker answers in milliseconds."""
    beat = settings.broker_heartbeat_s
    return {"confirm_publish": True, "read_timeout": beat / 2, "write_timeout": beat / 2}


def redis_transport_health(settings: Settings) -> dict[str, Any]:
    """kombu's Redis transport options for the same bound.

    ``health_check_interval`` (half a beat): kombu drops a BRPOP whose reply is overdue by more
    than this (BRPOP itself waits 1 s on the server), checked as often: within 1 s + one beat; it
    PINGs the pub/sub connection as often, and redis-py PINGs a pooled connection idle that long
    before using it (a silent one is replaced, the command goes through).
    ``socket_timeout`` (half a beat, ≥ 2 s): a plain command (ack, publish, the unacked-restore
    sweep) on a dead connection fails instead of blocking the worker's event loop, where those
    checks run; above the 1 s BRPOP, which is read only once readable anyway. No ``retry_on_timeout``: a timed-out command
    surfaces as a connection error that Celery answers by reconnecting, and a publish is never sent
    twice by redis-py behind kombu's back. Keepalive: the kernel notices a flow a NAT dropped."""
    beat = settings.broker_heartbeat_s
    return {
        "health_check_interval": _half(beat),
        "socket_timeout": beat / 2,
        "socket_connect_timeout": beat,
        "socket_keepalive": True,
        "socket_keepalive_options": _keepalive_options(beat),
    }


def _half(beat: float) -> int:
    """Half a heartbeat in whole seconds (kombu's timers and redis-py's checks take ints)."""
    return max(1, int(beat / 2))


def _keepalive_options(beat: float) -> dict[int, int]:
    """First probe after ``beat`` idle seconds, 3 probes ``beat / 3`` apart (where the OS has them)."""
    wanted = {"TCP_KEEPIDLE": int(beat), "TCP_KEEPINTVL": max(1, int(beat / 3)), "TCP_KEEPCNT": 3}
    return {getattr(socket, name): value for name, value in wanted.items() if hasattr(socket, name)}


app = Celery("browserq", set_as_current=False)
app.add_defaults(lambda: celery_config(get_settings()))

__all__ = [
    "HARD_LIMIT_GRACE_S",
    "SWEEP_TASK_NAME",
    "TASK_NAME",
    "WEBHOOK_TASK_NAME",
    "app",
    "celery_config",
    "connection_health",
    "pooled_result_engine",
    "sweep_queue",
    "time_limits",
    "transport_health",
    "webhook_queue",
]
