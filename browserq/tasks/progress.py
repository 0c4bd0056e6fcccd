"""Live progress of running runs: a ``PROGRESS`` task state that Flower and ``AsyncResult`` show.

Every step a run starts becomes ``AsyncResult(task_id).state == "PROGRESS"`` with
``.info == {run_id, step, of, step_path, step_id, action, url, attempt, status: "running"}``
(while the run waits for a person: ``{run_id, status: "waiting_for_human", message, until,
deadline, live_url}``, see :func:`waiting_meta`)
(``step`` of ``of`` counts top-level steps; ``url`` is already redacted by the runner; params
and outputs are never in it), written to the result backend, plus a ``task-progress`` event
whose ``result`` Flower's task page shows (Flower takes a task's state from events only).

Cheap by construction. Step events come from the worker's event-loop thread, which must never
wait on I/O: :class:`ProgressPublisher` only drops the step into one slot per task (a newer step
replaces an unwritten one) and a thread of its own writes the slots, at most one write per step
and per ``BROWSERQ_PROGRESS_INTERVAL_MS`` of each task (0: every step, still coalesced when the
backend is slower than the steps).

Never after the end. Celery writes the task's final state (SUCCESS, FAILURE, RETRY, REVOKED)
once the task returns; a PROGRESS row written after it would make a finished run look running.
So when a run's execution ends (``run_ended``, in the task thread) and again when the task's
:class:`Tracking` ends, the task's unwritten update is dropped and a write of it in flight is
waited for, before the task returns. The run → task mapping is the task's to make: it binds its
run id before executing and unbinds after (under ``--pool threads`` K runs share one process).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import structlog
from celery import Celery, states
from celery.utils.saferepr import saferepr

from browserq.errors import RunFailed
from browserq.run_events import RunEnded, RunObserver, RunWaiting, StepStarted
from browserq.settings import Settings
from browserq.tasks.app import app as celery_app
from browserq.tasks.app import pooled_result_engine

log = structlog.get_logger(__name__)

#: The custom Celery state of a run between STARTED and its end.
PROGRESS = "PROGRESS"
# Celery's event state (what Flower shows) ranks an unknown state above REVOKED: once a run had
# shown PROGRESS, its revoke (a cancel, Flower's Terminate) would never show. PROGRESS is a
# running state: rank it with STARTED, so REVOKED, SUCCESS and FAILURE follow it as they follow
# STARTED. Every process that loads browserq's app (workers, Flower, beat) has the rule.
states.PRECEDENCE_LOOKUP.setdefault(PROGRESS, states.PRECEDENCE_LOOKUP[states.STARTED])
#: The event each written state is announced with (Flower takes task states from events): a
#: session task's last state (a run's task sends its own), none for STARTED (the worker sent
#: task-started when it took the message), ``task-progress`` for any other.
STATE_EVENTS: dict[str, dict[str, Any] | None] = {
    states.STARTED: None,
    states.SUCCESS: {"type": "task-succeeded", "runtime": None},
    states.FAILURE: {"type": "task-failed", "exception": "RunFailed", "traceback": None},
    states.REVOKED: {"type": "task-revoked", "terminated": False, "signum": None, "expired": False},
}
#: The longest a task waits at its end for a progress write of it in flight (a backend that
#: hangs longer must not hold the run's slot forever; a warning says so).
END_WAIT_S = 30.0


@dataclass(eq=False)
class Binding:
    """One execution of a run by one task: where its progress goes."""

    run_id: str
    task_id: str
    #: The task's request (args already redacted by the task_prerun signal): what Celery stores
    #: with every state of the task (``result_extended``), so a PROGRESS row keeps name and args.
    request: Any
    hostname: str | None
    closed: bool = field(default=False)
    #: ``session``: an agent session's open task, whose progress its session's watcher publishes
    #: (:mod:`browserq.tasks.session_progress`), not its command steps.
    kind: str = "run"


def progress_meta(event: StepStarted) -> dict[str, Any]:
    """What ``AsyncResult.info`` holds while the run runs: where it is, nothing it read or got."""
    return {
        "run_id": event.run_id,
        "status": "running",
        "step": event.step,
        "of": event.of,
        "step_path": event.step_path,
        "step_id": event.step_id,
        "action": event.action,
        "url": event.url,
        "attempt": event.attempt,
    }


def waiting_meta(event: RunWaiting) -> dict[str, Any]:
    """What ``AsyncResult.info`` holds while the run waits for a person: the live-view link
    (one-time: once opened, ``browserq live RUN_ID`` gives a new one), the message, the end."""
    return {
        "run_id": event.run_id,
        "status": "waiting_for_human",
        "step_path": event.step_path,
        "message": event.message,
        "until": event.until,
        "deadline": event.deadline,
        "live_url": event.live_url,
    }


class ProgressPublisher(RunObserver):
    """Publishes each bound run's latest step from a thread of its own (see the module's doc)."""

    def __init__(self, app: Celery, interval_ms: int = 0, end_wait_s: float = END_WAIT_S) -> None:
        self.app = app
        self.interval_s = max(0, interval_ms) / 1000
        self.end_wait_s = end_wait_s
        self._cond = threading.Condition()
        self._bindings: dict[str, Binding] = {}  # run id -> its current execution here
        self._slots: dict[str, tuple[Binding, dict[str, Any], str]] = {}  # task id -> latest (meta, state), unwritten
        self._next_at: dict[str, float] = {}  # task id -> monotonic time its next write may go
        self._in_flight: Binding | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._complained = False

    # --- the task thread ------------------------------------------------------------------------
    def bind(self, run_id: str, task_id: str, request: Any = None, hostname: str | None = None,
             kind: str = "run") -> Binding:
        """From now on, ``run_id``'s steps are published as ``task_id``'s progress."""
        binding = Binding(run_id, task_id, request, hostname, kind=kind)
        with self._cond:
            self._bindings[run_id] = binding
        return binding

    def release(self, binding: Binding) -> None:
        """The task is about to return: drop its unwritten update, wait for one in flight."""
        with self._cond:
            self._close(binding)

    def run_ended(self, event: RunEnded) -> None:
        with self._cond:
            binding = self._bindings.get(event.run_id)
            if binding is not None:
                self._close(binding)

    def _close(self, binding: Binding) -> None:
        """(Lock held.) No write of ``binding`` starts after this returns, and none is running."""
        binding.closed = True
        if self._bindings.get(binding.run_id) is binding:
            del self._bindings[binding.run_id]
        slot = self._slots.get(binding.task_id)
        if slot is not None and slot[0] is binding:
            del self._slots[binding.task_id]
        self._next_at.pop(binding.task_id, None)
        deadline = time.monotonic() + self.end_wait_s
        while self._in_flight is binding:
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("a progress write is still running at the task's end; the task returns "
                            "anyway (the result backend is slow)", task_id=binding.task_id)
                return
            self._cond.wait(left)

    # --- the event-loop thread: never blocks on I/O ------------------------------------------------
    def step_started(self, event: StepStarted) -> None:
        self.publish(event.run_id, progress_meta(event), kind="run")

    def run_waiting(self, event: RunWaiting) -> None:
        """Published at once (not throttled): a person is needed now."""
        self.publish(event.run_id, waiting_meta(event), kind="run", at_once=True)

    def publish(self, run_id: str, meta: dict[str, Any], *, kind: str, at_once: bool = False,
                state: str = PROGRESS) -> None:
        """``meta`` becomes the task's state ``state`` (PROGRESS) when ``run_id`` is bound to a task
        of ``kind`` (a newer update replaces an unwritten one); never waits on I/O."""
        with self._cond:
            binding = self._bindings.get(run_id)
            if binding is None or binding.closed or binding.kind != kind:
                return  # not a task's run (in-process), or its execution already ended
            self._slots[binding.task_id] = (binding, meta, state)
            if at_once:
                self._next_at.pop(binding.task_id, None)
            self._ensure_thread()
            self._cond.notify_all()

    def drop(self, run_id: str) -> None:
        """``run_id`` is no longer this process's to publish: its unwritten update is dropped."""
        with self._cond:
            binding = self._bindings.get(run_id)
            if binding is not None:
                self._close(binding)

    def finish(self, run_id: str, state: str, meta: dict[str, Any]) -> None:
        """The last state of a session's task (SUCCESS, FAILURE, REVOKED), written after any
        unwritten update (which it replaces); the binding takes no update after it."""
        self.publish(run_id, meta, kind="session", at_once=True, state=state)
        with self._cond:
            binding = self._bindings.pop(run_id, None)
            if binding is not None:
                binding.closed = True

    def _ensure_thread(self) -> None:
        """(Lock held.) The writer thread of this process (a fork has none: start another)."""
        if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="browserq-progress", daemon=True)
        self._thread.start()

    # --- the writer thread -------------------------------------------------------------------------
    def _run(self) -> None:
        pooled_result_engine(self.app)  # this thread's backend: one pooled engine (celery#3032)
        while True:
            binding, meta, state = self._next()
            try:
                self._write(binding, meta, state)
            except Exception as exc:  # progress is for watchers: never let it touch a run
                if not self._complained:
                    self._complained = True
                    log.warning("could not publish a run's progress; going on without it",
                                task_id=binding.task_id, error=f"{type(exc).__name__}: {exc}"[:300])
            finally:
                with self._cond:
                    self._in_flight = None
                    self._cond.notify_all()

    def _next(self) -> tuple[Binding, dict[str, Any], str]:
        """Wait for a slot whose task may be written now; take it (marking the write in flight)."""
        with self._cond:
            while True:
                now = time.monotonic()
                due = next((t for t in self._slots if self._next_at.get(t, 0.0) <= now), None)
                if due is not None:
                    binding, meta, state = self._slots.pop(due)
                    self._next_at[due] = now + self.interval_s
                    self._in_flight = binding
                    return binding, meta, state
                waits = [self._next_at[t] - now for t in self._slots if t in self._next_at]
                self._cond.wait(min(waits) if waits else None)

    def _write(self, binding: Binding, meta: dict[str, Any], state: str = PROGRESS) -> None:
        """One backend write (``store_result``, what ``Task.update_state`` does) and one event."""
        backend, task_id = self.app.backend, binding.task_id
        if state == states.FAILURE:
            backend.mark_as_failure(task_id, RunFailed(meta), traceback=None, request=binding.request)
        elif state == states.REVOKED:
            backend.mark_as_revoked(task_id, str(meta.get("why") or "cancelled"), request=binding.request)
        else:
            backend.store_result(task_id, meta, state, request=binding.request)
        fields = STATE_EVENTS.get(state, {"type": "task-progress", "retry": False})
        if self.app.conf.worker_send_task_events and fields is not None:
            with self.app.events.default_dispatcher(hostname=binding.hostname) as dispatcher:
                dispatcher.send(fields["type"], uuid=task_id, result=saferepr(meta),
                                **{k: v for k, v in fields.items() if k != "type"})


class Tracking:
    """A task's binding of its run to its progress, ended (released) before the task returns."""

    def __init__(self, publisher: ProgressPublisher | None, binding: Binding | None) -> None:
        self.publisher, self.binding = publisher, binding

    def end(self) -> None:
        if self.publisher is not None and self.binding is not None:
            self.publisher.release(self.binding)


_publisher: ProgressPublisher | None = None
_publisher_lock = threading.Lock()


def progress_observer(settings: Settings) -> ProgressPublisher:
    """This process's publisher (one per process: the task binds runs to it)."""
    global _publisher
    with _publisher_lock:
        if _publisher is None:
            _publisher = ProgressPublisher(celery_app, settings.progress_interval_ms)
        return _publisher


def track_progress(run_id: str, request: Any) -> Tracking:
    """Called by the task before it executes ``run_id``: publish its steps as the task's progress
    (a no-op in a process whose runtime has no publisher)."""
    publisher = _publisher
    task_id = getattr(request, "id", None)
    if publisher is None or not task_id:
        return Tracking(None, None)
    binding = publisher.bind(run_id, task_id, request, getattr(request, "hostname", None))
    # The task's STARTED state (Celery's own write of it is off for the run task): from this
    # thread like every update, so a backend that cannot take it now — its row locked by a worker
    # frozen inside a write — costs a warning, never the run.
    publisher.publish(run_id, {"pid": os.getpid(), "hostname": binding.hostname}, kind="run", at_once=True,
                      state=states.STARTED)
    return Tracking(publisher, binding)


__all__ = ["END_WAIT_S", "PROGRESS", "Binding", "ProgressPublisher", "Tracking", "progress_meta",
           "progress_observer", "track_progress"]
