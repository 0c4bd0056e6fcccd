"""What a run tells whoever watches it while it runs: Flower's progress, metrics, log lines, the CLI.

A leaf module (it imports nothing of browserq): the runner tells, and the packages that watch —
``metrics``, ``tasks``, ``execute`` — listen without importing the runner.

A :class:`RunObserver` sees a run's execution start, each step attempt start and finish, waits for a
person begin and end, and the execution end (for good, or to be retried later). Observers watch; they
never steer: :class:`Observers` calls each one in turn and an observer that raises is logged once
per kind and otherwise ignored, so a broken dashboard never fails a run.

Events come from two threads: ``run_started``/``run_ended`` from the thread that executes the
task, the step events from the worker's event-loop thread. An observer that does I/O (a result
backend write) must not block the loop: hand the work to a thread of its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import structlog

log = structlog.get_logger(__name__)


def tell_each(listeners: Iterable[object], kind: str, event: object, complained: set[tuple[str, str]],
              what: str) -> None:
    """``listener.<kind>(event)`` for each listener in turn; one that raises is logged once per
    (listener type, kind) — a broken listener must not flood the log — and otherwise ignored."""
    for listener in listeners:
        try:
            getattr(listener, kind)(event)
        except Exception as exc:
            key = (type(listener).__name__, kind)
            if key not in complained:
                complained.add(key)
                log.warning(f"{what} failed; ignoring it", listener=key[0], on=kind,
                            error=f"{type(exc).__name__}: {exc}"[:300])


@dataclass(frozen=True)
class StepEvent:
    """One finished step attempt, as shown to a live listener (the CLI's progress lines)."""

    step_path: str
    step_id: str | None
    action: str
    attempt: int
    status: str
    duration_ms: float
    error_code: str | None
    error_message: str | None
    url: str | None
    run_id: str | None = None


StepListener = Callable[[StepEvent], None]



@dataclass(frozen=True)
class RunStarted:
    """An execution of a recorded run began in this process (its lease is held)."""

    run_id: str
    template: str
    version: str
    attempt: int
    worker: str


@dataclass(frozen=True)
class StepStarted:
    """A step attempt is about to act on the page. ``step`` of ``of`` counts top-level steps."""

    run_id: str
    step_path: str
    step: int
    of: int
    step_id: str | None
    action: str
    attempt: int
    url: str | None


@dataclass(frozen=True)
class RunEnded:
    """An execution ended: ``status`` is the run's final status, or ``retrying`` when the run
    goes back to the queue. ``duration_s`` is filled in by :class:`Observers`."""

    run_id: str
    status: str
    error_code: str | None = None
    template: str = ""
    duration_s: float | None = None


@dataclass(frozen=True)
class RunWaiting:
    """The run waits for a person (``waiting_for_human``): ``live_url`` is a one-time link to
    its live view (None when the worker serves none), ``deadline`` an ISO time (UTC)."""

    run_id: str
    step_path: str
    message: str
    until: str | None
    deadline: str
    live_url: str | None
    template: str = ""  # the run's template name (a metric's label)


@dataclass(frozen=True)
class HandoffEnded:
    """A wait for a person ended: ``condition`` or ``continued`` (the run goes on), ``gave_up``,
    ``timeout`` or ``budget`` (the run fails), ``interrupted`` (cancelled, lease lost)."""

    run_id: str
    step_path: str
    outcome: str
    waited_s: float
    template: str = ""  # the run's template name (a metric's label)


class RunObserver:
    """Watches runs; override what you need (every method does nothing here)."""

    def run_started(self, event: RunStarted) -> None:
        """An execution began."""

    def step_started(self, event: StepStarted) -> None:
        """A step attempt began."""

    def step_finished(self, event: StepEvent) -> None:
        """A step attempt ended (succeeded, failed, skipped, ...)."""

    def run_ended(self, event: RunEnded) -> None:
        """An execution ended."""

    def run_waiting(self, event: RunWaiting) -> None:
        """The run began waiting for a person."""

    def handoff_ended(self, event: HandoffEnded) -> None:
        """A wait for a person ended (the run goes on, or fails)."""


class ListenerObserver(RunObserver):
    """A plain step listener (``Runtime(listener=...)``, the CLI's progress lines) as an observer."""

    def __init__(self, listener: StepListener) -> None:
        self.listener = listener

    def step_finished(self, event: StepEvent) -> None:
        self.listener(event)


class Observers(RunObserver):
    """Every observer of this process, called in order; each one's failure is contained."""

    def __init__(self, observers: Iterable[RunObserver] = ()) -> None:
        self._observers: list[RunObserver] = list(observers)
        self._lock = threading.Lock()
        self._running: dict[str, tuple[float, str]] = {}  # run id -> (monotonic start, template)
        self._complained: set[tuple[str, str]] = set()

    def add(self, observer: RunObserver) -> None:
        with self._lock:
            self._observers = [*self._observers, observer]

    def remove(self, observer: RunObserver) -> None:
        """Stop telling ``observer`` (one that was added; a test's, say)."""
        with self._lock:
            self._observers = [o for o in self._observers if o is not observer]

    def __bool__(self) -> bool:
        return bool(self._observers)

    def run_started(self, event: RunStarted) -> None:
        with self._lock:
            self._running[event.run_id] = (time.monotonic(), event.template)
        self._tell("run_started", event)

    def step_started(self, event: StepStarted) -> None:
        self._tell("step_started", event)

    def step_finished(self, event: StepEvent) -> None:
        self._tell("step_finished", event)

    def run_waiting(self, event: RunWaiting) -> None:
        self._tell("run_waiting", event)

    def handoff_ended(self, event: HandoffEnded) -> None:
        self._tell("handoff_ended", event)

    def run_ended(self, event: RunEnded) -> None:
        """Tell the end of an execution that :meth:`run_started` announced (a duplicate delivery
        of a finished run, or one busy elsewhere, never started here: nothing to tell)."""
        with self._lock:
            started = self._running.pop(event.run_id, None)
        if started is None:
            return
        self._tell("run_ended", replace(event, duration_s=time.monotonic() - started[0],
                                        template=event.template or started[1]))

    def _tell(self, kind: str, event: object) -> None:
        tell_each(self._observers, kind, event, self._complained, "run observer")


__all__ = [
    "HandoffEnded",
    "ListenerObserver",
    "Observers",
    "RunEnded",
    "RunObserver",
    "RunStarted",
    "RunWaiting",
    "StepStarted",
]
