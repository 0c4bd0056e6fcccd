"""Every metric a worker process records, and the one-line calls that record them (the parts that
are measured never import this: they are handed these calls, see :mod:`browserq.tasks.observers`).

The metric objects are module-level and labelled, so their values are created at the first
``labels(...)`` call — in a prefork child, after :func:`browserq.metrics.multiproc.use_directory`
put the parent in multiprocess mode before the fork. Only a worker with ``BROWSERQ_METRICS_PORT``
hands them to its parts; a test that hands them itself records into prometheus_client's
in-memory values, which nobody serves.

Label values are bounded: template names and actions come from the templates, error codes and
statuses from fixed sets (anything else becomes ``other``); never a URL, a host of an unlimited
domain, a run id or a proxy's credentials. Gauges are per process and summed over the live ones
(``livesum``): a dead child's gauges vanish (see :mod:`browserq.metrics.multiproc`).
"""

from __future__ import annotations

import threading

from prometheus_client import Counter, Gauge, Histogram

from browserq.errors import Codes

#: Run durations: a login form takes seconds, a long scrape many minutes.
RUN_BUCKETS_S = (0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600)
#: Step durations: most take milliseconds, a navigation or a wait seconds.
STEP_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
#: Rate-limit waits: from a fraction of a token's interval to a long queue behind a slow limit.
WAIT_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)

RUN_STATUSES = frozenset({"completed", "failed", "cancelled", "needs_review", "retrying", "interrupted"})
STEP_STATUSES = frozenset({"succeeded", "failed", "skipped", "started", "unknown"})
OTHER = "other"

RUNS_FINISHED = Counter(
    "browserq_runs_finished", "Executions ended, by template, status (retrying: back to the queue) "
    "and error code (empty when none).", ["template", "status", "code"])
RUN_DURATION = Histogram(
    "browserq_run_duration_seconds", "Time one execution of a run took in a worker process.",
    ["template", "status"], buckets=RUN_BUCKETS_S)
RUNS_IN_PROGRESS = Gauge(
    "browserq_runs_in_progress", "Executions running now.", ["template"], multiprocess_mode="livesum")
RUNS_WAITING_FOR_HUMAN = Gauge(
    "browserq_runs_waiting_for_human", "Runs waiting for a person now (each holds a worker slot), by "
    "template (a session's: session).", ["template"], multiprocess_mode="livesum")
HANDOFFS = Counter(
    "browserq_handoffs", "Waits for a person that ended, by outcome (condition, continued, gave_up, "
    "timeout, interrupted).", ["outcome"])
HANDOFF_WAIT = Histogram(
    "browserq_handoff_wait_seconds", "How long a run waited for a person.", ["outcome"],
    buckets=(5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600))
STEP_DURATION = Histogram(
    "browserq_step_duration_seconds", "Time of one step attempt, by action and status.",
    ["action", "status"], buckets=STEP_BUCKETS_S)
STEPS_RETRIED = Counter(
    "browserq_steps_retried", "Step attempts after the first (retries in place).", ["action"])
BROWSER_LAUNCHES = Counter(
    "browserq_browser_launches", "Chromium launches: start (a process's first), recycle (the "
    "successor of a retired browser), relaunch (after a crash or a lost driver).", ["kind"])
BROWSER_RECYCLES = Counter(
    "browserq_browser_recycles", "Browsers retired, by reason: contexts, age or rss.", ["reason"])
CONTEXTS = Gauge(
    "browserq_browser_contexts", "Browser contexts: in_use (held by a run) and spare (pre-warmed).",
    ["state"], multiprocess_mode="livesum")
PROXY_FAILURES = Counter(
    "browserq_proxy_failures", "Proxy failures reported by this worker, by kind.", ["kind"])
RATE_LIMIT_WAITS = Counter(
    "browserq_rate_limit_waits", "Page loads that waited for a rate-limit token, by limited "
    "domain (* for the default limit).", ["domain"])
RATE_LIMIT_WAIT = Histogram(
    "browserq_rate_limit_wait_seconds", "Time page loads under a rate limit waited for their token "
    "(0 when one was free).", ["domain"], buckets=WAIT_BUCKETS_S)
IDENTITY_LEASES = Counter(
    "browserq_identity_leases", "Identity lease requests: leased, busy (held by another run) or "
    "unavailable (unknown, disabled).", ["result"])
SESSIONS_OPENED = Counter(
    "browserq_sessions_opened", "Agent sessions this process began to hold: opened (for their "
    "client) or takeover (from a lost worker).", ["kind"])
SESSIONS_CLOSED = Counter(
    "browserq_sessions_closed", "Agent sessions this process let go, by their run's status (lost: "
    "another worker takes it over) and code (SESSION_IDLE, SESSION_LIFETIME, CANCELLED…; empty when "
    "closed by its client).", ["status", "code"])
SESSIONS_HELD = Gauge(
    "browserq_sessions_held", "Agent sessions held now (each one browser context, no Celery slot); "
    "state is open (labelled: a multiprocess value exists only after a child's first labels()).",
    ["state"], multiprocess_mode="livesum")
SESSION_COMMANDS = Counter(
    "browserq_session_commands", "Messages a session answered, by action (snapshot, batch, or the "
    "command's action) and outcome (ok, the error code, closed).", ["action", "outcome"])
SESSION_COMMAND_DURATION = Histogram(
    "browserq_session_command_duration_seconds", "Time from a session message's arrival at its "
    "holder to its reply, by action.", ["action"], buckets=STEP_BUCKETS_S)
PRUNED = Counter(
    "browserq_pruned", "What retention deleted: runs, rows (in all tables) and artifact_bytes.", ["what"])


class BoundedLabel:
    """Label values as they come, up to ``limit`` distinct ones per process; ``other`` after.

    Template names and actions are bounded by the templates a fleet serves; this is the guard
    that keeps a bug (or a flood of generated templates) from exploding the series count."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        value = (value or "")[:100]
        if value in self._seen:
            return value
        with self._lock:
            if len(self._seen) >= self.limit:
                return OTHER
            self._seen.add(value)
        return value


template_label = BoundedLabel(500)
action_label = BoundedLabel(100)
_CODES = frozenset(code.code for code in Codes.all())


def code_label(code: str | None) -> str:
    """An error code as a label: ``""`` for none, ``other`` for one browserq does not define."""
    if not code:
        return ""
    return code if code in _CODES else OTHER


def one_of(value: str, allowed: frozenset[str]) -> str:
    return value if value in allowed else OTHER


# --- the calls the meters handed to the instrumented parts make (browserq.tasks.observers) ------
def browser_launched(*, first: bool, replaced_live: bool) -> None:
    """A Chromium was launched: the process's first, the successor of a retired browser, or a
    relaunch (``replaced_live``: the pool still had a current browser, gone or disconnected)."""
    BROWSER_LAUNCHES.labels("start" if first else "relaunch" if replaced_live else "recycle").inc()


def recycle_reason(reason: str) -> str:
    """The bounded name of a reason :func:`browserq.browsers.instance.retire_reason` gives."""
    if reason.startswith("served"):
        return "contexts"
    if "RSS" in reason:
        return "rss"
    return "age" if reason.endswith(" old") else OTHER


def browser_recycled(reason: str) -> None:
    BROWSER_RECYCLES.labels(recycle_reason(reason)).inc()


def contexts_in_use(count: int) -> None:
    CONTEXTS.labels("in_use").set(count)


def spare_contexts(count: int) -> None:
    CONTEXTS.labels("spare").set(count)


def proxy_failed(kind: str) -> None:
    PROXY_FAILURES.labels(kind).inc()


def rate_limit_waited(domain: str, seconds: float) -> None:
    """A page load under ``domain``'s limit got its token after ``seconds`` (``*``: the default
    limit, whose buckets are per host — the host is never a label)."""
    RATE_LIMIT_WAIT.labels(domain).observe(seconds)
    if seconds > 0:
        RATE_LIMIT_WAITS.labels(domain).inc()


def pruned(*, runs: int, rows: int, artifact_bytes: int) -> None:
    """One batch of finished runs deleted by retention."""
    PRUNED.labels("runs").inc(runs)
    PRUNED.labels("rows").inc(rows)
    PRUNED.labels("artifact_bytes").inc(artifact_bytes)


def identity_lease(result: str) -> None:
    IDENTITY_LEASES.labels(result).inc()


class PoolMetrics:
    """The browser pool's meter (:class:`browserq.browsers.meter.PoolMeter`) in a worker."""

    def browser_launched(self, *, first: bool, replaced_live: bool) -> None:
        browser_launched(first=first, replaced_live=replaced_live)

    def browser_recycled(self, reason: str) -> None:
        browser_recycled(reason)

    def contexts_in_use(self, count: int) -> None:
        contexts_in_use(count)

    def spare_contexts(self, count: int) -> None:
        spare_contexts(count)


__all__ = [
    "BROWSER_LAUNCHES",
    "BROWSER_RECYCLES",
    "CONTEXTS",
    "IDENTITY_LEASES",
    "PROXY_FAILURES",
    "RATE_LIMIT_WAIT",
    "RATE_LIMIT_WAITS",
    "RUNS_FINISHED",
    "RUNS_IN_PROGRESS",
    "RUN_DURATION",
    "SESSIONS_CLOSED",
    "SESSIONS_HELD",
    "SESSIONS_OPENED",
    "SESSION_COMMANDS",
    "SESSION_COMMAND_DURATION",
    "STEPS_RETRIED",
    "STEP_DURATION",
    "BoundedLabel",
    "PoolMetrics",
    "action_label",
    "browser_launched",
    "browser_recycled",
    "code_label",
    "contexts_in_use",
    "identity_lease",
    "one_of",
    "proxy_failed",
    "rate_limit_waited",
    "recycle_reason",
    "spare_contexts",
    "template_label",
]
