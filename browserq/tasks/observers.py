"""Who hooks into what, in one place: the observers of a worker process's runs, the meters its
runtime's parts report to, and the relay each kind of process builds its store with. Each concern
(Flower progress, Prometheus metrics, step log lines, webhook delivery) plugs in here with one
line, through a constructor, never by setting an attribute on another object."""

from __future__ import annotations

from browserq.execute.meters import UNMETERED_RUNTIME, RuntimeMeters
from browserq.execute.retention import PruneListener
from browserq.metrics import definitions as metrics
from browserq.metrics.observer import metrics_observers
from browserq.metrics.sessions import session_metrics
from browserq.run_events import RunObserver
from browserq.session_events import SessionWatchers
from browserq.settings import Settings
from browserq.store.relay import WebhookRelay
from browserq.tasks.progress import progress_observer
from browserq.tasks.session_progress import session_progress
from browserq.tasks.webhooks import queued_relay, threaded_relay


def worker_observers(settings: Settings) -> list[RunObserver]:
    """The observers of a worker process's runtime, in the order they are told."""
    observers: list[RunObserver] = []
    observers.append(progress_observer(settings))  # PROGRESS state for Flower / AsyncResult.info
    observers += metrics_observers(settings)  # Prometheus runs and steps, when metrics are on
    return observers


def session_watchers(settings: Settings) -> SessionWatchers:
    """The watchers of the agent sessions a worker process holds: their open task's progress
    (Flower / ``AsyncResult``), and Prometheus when metrics are on."""
    return SessionWatchers([session_progress(settings), *session_metrics(settings)])


def worker_meters(settings: Settings) -> RuntimeMeters:
    """What a worker's pool, rate limiter, proxies and identity slots report to: Prometheus when
    metrics are on (``BROWSERQ_METRICS_PORT``), else nobody."""
    if settings.metrics_port is None:
        return UNMETERED_RUNTIME
    return RuntimeMeters(
        pool=metrics.PoolMetrics(),
        rate_limit_waited=metrics.rate_limit_waited,
        proxy_failed=metrics.proxy_failed,
        identity_leased=metrics.identity_lease,
    )


def retention_meter(settings: Settings) -> PruneListener | None:
    """What the fleet's scheduled prune reports to (it runs in a worker): Prometheus when metrics
    are on, else nobody (``browserq prune`` at a prompt reports to nobody either)."""
    return metrics.pruned if settings.metrics_port is not None else None


def worker_relay(settings: Settings) -> WebhookRelay:
    """A worker's store: a run's events are POSTed from threads of the worker as soon as recorded."""
    return threaded_relay(settings)


def client_relay(settings: Settings | None = None) -> WebhookRelay:
    """A producer's, the sweep's or a CLI command's store (the process may exit at once): new
    events leave as delivery tasks on the webhook queue."""
    return queued_relay(settings)


__all__ = ["client_relay", "retention_meter", "session_watchers", "worker_meters", "worker_observers", "worker_relay"]
