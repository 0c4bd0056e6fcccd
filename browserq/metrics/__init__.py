"""Operating a worker host: Prometheus metrics and readiness.

* :mod:`~browserq.metrics.definitions` — every ``browserq_*`` metric, with the bounded labels
  they take, and the one-line calls that record them, handed to the browser pool, proxies,
  limits and identities as their meters by :mod:`browserq.tasks.observers`;
* :mod:`~browserq.metrics.observer` — the run observer that counts runs and steps;
* :mod:`~browserq.metrics.multiproc` — prometheus_client's multiprocess directory, shared by a
  prefork worker's children;
* :mod:`~browserq.metrics.collectors` — what is read at scrape time (queue depth, proxy
  cooldowns, warm processes);
* :mod:`~browserq.metrics.readiness` — per-process warm markers and the worker's ready file;
* :mod:`~browserq.metrics.server` — the HTTP server (``/metrics``, ``/ready``);
* :mod:`~browserq.metrics.lifecycle` — the worker's lifecycle hooks that put them together.

This package imports nothing at load. The parts it measures never import it: they are handed
their meters, so the layers below (browsers, limits, proxies) do not depend on it.
"""
