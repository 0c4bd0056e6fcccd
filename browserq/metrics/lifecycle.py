"""A worker's metrics and readiness over its life, one call per Celery signal (tasks/signals.py).

* :func:`prepare` — ``worker_init``, in the parent before it forks: the multiprocess directory
  the children will record into (wiped), no stale ready file or marker of a killed worker;
* :func:`serve` — ``worker_ready``, in the parent: the ready watch and the HTTP server;
* :func:`after_fork` — ``worker_process_init``, in each child: close the inherited socket;
* :func:`process_warm` / :func:`process_cold` — a process's runtime started / stopped
  (:mod:`browserq.tasks.worker`);
* :func:`draining` — ``worker_shutting_down``, in the parent: not ready any more, at once;
* :func:`child_exited` — ``worker_process_shutdown``, in each child: its gauges stop counting;
* :func:`shutdown` — ``worker_shutdown``, in the parent: stop serving, remove the ready file,
  the markers and a temporary metrics directory.

Metrics are on when ``BROWSERQ_METRICS_PORT`` is set, readiness when it or
``BROWSERQ_READY_FILE`` is. With ``--pool threads`` the one process is parent and child.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from browserq.metrics import multiproc, readiness
from browserq.metrics.collectors import (
    SCRAPE_TIMEOUT_S,
    LiveProcessesCollector,
    ProxyCooldownCollector,
    QueueDepthCollector,
    ReadinessCollector,
)
from browserq.metrics.readiness import ReadyWatch
from browserq.metrics.server import MetricsServer
from browserq.settings import Settings, get_settings

log = structlog.get_logger(__name__)


@dataclass
class _Worker:
    """What the worker parent runs for metrics and readiness."""

    settings: Settings
    pid: int
    directory: Path | None = None
    owns_directory: bool = False
    watch: ReadyWatch | None = None
    server: MetricsServer | None = None
    queues: QueueDepthCollector | None = None


_worker: _Worker | None = None


def prepare(settings: Settings) -> None:
    """Before the fork: where the children record, and a clean slate for readiness."""
    global _worker
    if settings.metrics_port is None and settings.ready_file is None:
        return
    worker = _Worker(settings, os.getpid())
    if settings.metrics_port is not None:
        worker.directory, worker.owns_directory = multiproc.prepare_directory(settings.metrics_dir)
        multiproc.use_directory(worker.directory)
    base = readiness.marker_base(settings)
    if base is not None:
        worker.watch = ReadyWatch(base, settings.ready_file)
        worker.watch.clear()
    _worker = worker


def serve(app: Any, processes: int | None) -> None:
    """The worker is up (its children forked): watch readiness, serve ``/metrics`` and ``/ready``."""
    worker = _worker
    if worker is None or os.getpid() != worker.pid:
        return
    if worker.watch is not None:
        worker.watch.processes = processes
        worker.watch.start()
    if worker.directory is None or worker.watch is None:
        return
    registry = CollectorRegistry(auto_describe=True)
    registry.register(LiveProcessesCollector(worker.directory))
    worker.queues = QueueDepthCollector(lambda: _broker_connection(app), sorted(app.amqp.queues.consume_from))
    registry.register(worker.queues)
    registry.register(ReadinessCollector(worker.watch))
    try:
        if worker.settings.proxies or worker.settings.proxies_file:
            registry.register(ProxyCooldownCollector(worker.settings))
    except Exception as exc:  # the runtime reports bad proxy settings; metrics go on without them
        log.warning("proxy metrics unavailable", error=str(exc)[:200])
    port = worker.settings.metrics_port
    assert port is not None
    host = worker.settings.metrics_host
    try:
        worker.server = MetricsServer(port, registry, worker.watch.check, address=host).start()
    except OSError as exc:
        log.error("metrics not served: cannot listen", host=host, port=port, error=str(exc)[:200],
                  hint="set BROWSERQ_METRICS_PORT to a port free on this host (one per worker), "
                  "BROWSERQ_METRICS_HOST to an address of this host")
        return
    log.info("metrics served", address=worker.server.address, paths="/metrics /ready",
             directory=str(worker.directory))


def _broker_connection(app: Any) -> Any:
    """A broker connection for scrapes: the app's, with short timeouts on every socket."""
    timeout = SCRAPE_TIMEOUT_S
    return app.connection_for_read(connect_timeout=timeout, transport_options={
        "socket_timeout": timeout, "socket_connect_timeout": timeout,  # Redis
        "read_timeout": timeout, "write_timeout": timeout,  # RabbitMQ
    })


def draining() -> None:
    """The worker was told to stop: not ready from now on (the ready file goes at once)."""
    worker = _worker
    if worker is not None and worker.watch is not None and os.getpid() == worker.pid:
        worker.watch.drain()


def after_fork() -> None:
    """In a freshly forked child: the parent's listening socket is not this process's to hold."""
    worker = _worker
    if worker is not None and worker.server is not None and os.getpid() != worker.pid:
        worker.server.close_inherited()


def process_warm() -> None:
    readiness.mark_warm(get_settings())


def process_cold() -> None:
    readiness.mark_cold(get_settings())


def child_exited() -> None:
    """A worker child is exiting: its live gauges (contexts, runs in progress) leave the sums."""
    process_cold()
    if get_settings().metrics_port is not None:
        multiproc.process_exited(os.getpid())


def shutdown() -> None:
    """The worker is stopping: no endpoint, no ready file, no markers, no temporary directory."""
    global _worker
    worker, _worker = _worker, None
    if worker is None or os.getpid() != worker.pid:
        return
    if worker.server is not None:
        worker.server.stop()
    if worker.queues is not None:
        worker.queues.close()
    if worker.watch is not None:
        worker.watch.stop()
    if worker.directory is not None and worker.owns_directory:
        multiproc.remove_directory(worker.directory)


__all__ = ["after_fork", "child_exited", "draining", "prepare", "process_cold", "process_warm", "serve",
           "shutdown"]
