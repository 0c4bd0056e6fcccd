"""What the worker parent reads at scrape time: its processes' files, the broker, proxy health.

Each collector is cheap (a directory listing, one broker round trip per queue, one Redis
pipeline) and bounded by short socket timeouts, so a down broker makes a scrape say so
(``browserq_broker_up 0``) instead of hanging it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import structlog
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from browserq.metrics import multiproc
from browserq.metrics.readiness import ReadyWatch
from browserq.settings import Settings

log = structlog.get_logger(__name__)

#: Seconds a scrape waits for the broker or Redis (connect and each answer).
SCRAPE_TIMEOUT_S = 2.0


class LiveProcessesCollector:
    """prometheus_client's merge of the processes' files, after marking the gone ones dead."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._merge = MultiProcessCollector(None, str(path))

    def collect(self) -> Iterator[Metric]:
        multiproc.reap_dead(self.path)
        yield from self._merge.collect()


class QueueDepthCollector:
    """``browserq_queue_depth{queue}``: messages waiting in each queue this worker consumes.

    Redis: the length of the queue's lists (kombu sums its priority lists; an empty queue has no
    key: 0). RabbitMQ: a passive ``queue_declare``'s message count (ready, not unacked)."""

    def __init__(self, connect: Callable[[], Any], queues: Sequence[str]) -> None:
        self.connect, self.queues = connect, list(dict.fromkeys(queues))
        self._connection: Any = None
        self._lock = threading.Lock()

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily("browserq_queue_depth", "", labels=["queue"]),
                GaugeMetricFamily("browserq_broker_up", "")]

    def collect(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily("browserq_queue_depth", "Messages waiting in the queue (not yet "
                                  "delivered to a worker).", labels=["queue"])
        with self._lock:
            try:
                for queue, count in self._depths().items():
                    if count is not None:
                        depth.add_metric([queue], count)
                up = 1
            except Exception as exc:
                log.warning("queue depth unavailable", error=f"{type(exc).__name__}: {exc}"[:200])
                self._drop()
                up = 0
        yield depth
        yield GaugeMetricFamily("browserq_broker_up", "Whether the last scrape reached the broker.", up)

    def _depths(self) -> dict[str, int | None]:
        if self._connection is None:
            connection = self.connect()
            connection.ensure_connection(max_retries=0, timeout=SCRAPE_TIMEOUT_S)
            self._connection = connection
        connection = self._connection
        from kombu.transport import virtual

        if not isinstance(connection.transport, virtual.Transport):  # RabbitMQ
            return {queue: self._amqp_depth(connection, queue) for queue in self.queues}
        channel = connection.default_channel  # Redis: kombu's in-process emulation of AMQP
        return {queue: _virtual_depth(connection, channel, queue) for queue in self.queues}

    @staticmethod
    def _amqp_depth(connection: Any, queue: str) -> int | None:
        """A channel per queue: the server closes a channel whose passive declare fails."""
        with connection.channel() as channel:
            try:
                return channel.queue_declare(queue=queue, passive=True).message_count
            except connection.channel_errors:
                return None  # no such queue (yet): nothing to report

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception as exc:
                log.debug("broker connection close failed", error=str(exc)[:200])

    def close(self) -> None:
        with self._lock:
            self._drop()


def _virtual_depth(connection: Any, channel: Any, queue: str) -> int:
    from kombu.exceptions import ChannelError

    try:
        return channel.queue_declare(queue=queue, passive=True).message_count
    except (ChannelError, *connection.channel_errors):
        return 0  # Redis keeps no key for an empty queue


class ProxyCooldownCollector:
    """``browserq_proxies`` and ``browserq_proxies_cooling_down``: the configured proxies and how
    many are cooling down now. Fleet-wide figures (health lives in Redis): every worker reports
    the same, so aggregate them with ``max``, not ``sum``."""

    def __init__(self, settings: Settings) -> None:
        from browserq.proxies import ProxyConfig, ProxyHealth, make_redis

        self.config = ProxyConfig.from_settings(settings)
        self.health = ProxyHealth.from_config(
            self.config, client=make_redis(self.config.redis_url, retries=0, timeout_s=SCRAPE_TIMEOUT_S))

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily("browserq_proxies", ""), GaugeMetricFamily("browserq_proxies_cooling_down", "")]

    def collect(self) -> Iterator[Metric]:
        proxies = self.config.proxies
        yield GaugeMetricFamily("browserq_proxies", "Proxies configured.", len(proxies))
        try:
            until = self.health.cooldowns(proxies)
        except Exception as exc:
            log.warning("proxy health unavailable", error=f"{type(exc).__name__}: {exc}"[:200])
            return
        now = time.time()
        yield GaugeMetricFamily("browserq_proxies_cooling_down", "Proxies cooling down after "
                                "failures (fleet-wide).", sum(1 for t in until.values() if t > now))


class ReadinessCollector:
    """``browserq_worker_processes_warm``: this worker's processes with a warm browser."""

    def __init__(self, watch: ReadyWatch) -> None:
        self.watch = watch

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily("browserq_worker_processes_warm", "")]

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily("browserq_worker_processes_warm", "Worker processes whose browser "
                                "is warm (they can take runs).", self.watch.check().warm)


__all__ = ["SCRAPE_TIMEOUT_S", "LiveProcessesCollector", "ProxyCooldownCollector", "QueueDepthCollector",
           "ReadinessCollector"]
