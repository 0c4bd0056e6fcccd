"""Following a run until it ends: a live progress bar (``enqueue --wait``, ``show --follow``).

Where the run is comes from the result backend's ``PROGRESS`` state when the run has a task id
(what the worker publishes at each step, see :mod:`browserq.tasks.progress`), else — or when the
backend cannot be read — from the store's step records (written in batches, so it lags by up
to ``BROWSERQ_JOURNAL_FLUSH_MS``). Whether the run ended is always the store's word.

Progress goes to stderr, so that stdout keeps only what a script reads (a run id, the result):
a Rich bar on a terminal, else one line per change.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from browserq.cli.render import err_console
from browserq.cli.terminal import inert

if TYPE_CHECKING:
    from browserq.store import Store

#: How often the store (and the result backend) are asked where the run is.
POLL_S = 0.5


@dataclass(frozen=True)
class Where:
    """Where a run is: its status, and the step it runs (``step`` of ``of``: top-level steps)."""

    status: str
    step: int | None = None
    of: int | None = None
    action: str | None = None
    url: str | None = None
    attempt: int = 1

    def line(self) -> str:
        if self.step is None:
            return self.status
        retry = f" (attempt {self.attempt})" if self.attempt > 1 else ""
        where = f"step {self.step} of {self.of}" if self.of else f"step {self.step}"
        return "  ".join(p for p in (f"{where}{retry}", self.action, self.url) if p)


class RunWatch:
    """Reads where one run is, from the backend's PROGRESS meta or the store's step records."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.backend: Any = None
        self._backend_failed = False
        self._of: int | None = None

    def run(self) -> Any:
        run = self.store.runs.get_run(self.run_id)
        assert run is not None, self.run_id
        return run

    def where(self, run: Any) -> Where:
        if run.status == "queued" and run.queue:
            return Where(f"queued on {run.queue}, waiting for a worker")
        if run.status == "waiting_for_human":
            return Where(f"waiting for a person (a live view: browserq live {run.id})")
        if run.status != "running":
            return Where(run.status)
        meta = self._progress(run.task_id) if run.task_id else None
        if meta is not None:
            return Where("running", meta.get("step"), meta.get("of"), meta.get("action"),
                         meta.get("url"), int(meta.get("attempt") or 1))
        return self._from_steps(run)

    def _progress(self, task_id: str) -> dict[str, Any] | None:
        """The task's PROGRESS meta, or None (another state, or no backend to read)."""
        if self._backend_failed:
            return None
        try:
            if self.backend is None:
                from browserq.celery_app import app

                self.backend = app.backend
            meta = self.backend.get_task_meta(task_id)
        except Exception:  # no backend here (or it is down): the store tells, a little later
            self._backend_failed = True
            return None
        info = meta.get("result")
        return info if meta.get("status") == "PROGRESS" and isinstance(info, dict) else None

    def _from_steps(self, run: Any) -> Where:
        steps = [s for s in self.store.steps.steps(self.run_id) if s.run_attempt == run.attempt]
        if not steps:
            return Where("running")
        last = steps[-1]
        digits = len(last.step_path) - len(last.step_path.lstrip("0123456789"))
        step = int(last.step_path[:digits]) + 1 if digits else None
        return Where("running", step, self._step_count(run), last.action,
                     last.url_after or last.url_before, last.attempt)

    def _step_count(self, run: Any) -> int | None:
        """How many top-level steps the run's template has (read once from its stored body)."""
        if self._of is None:
            try:
                from browserq.templates import load_template_text

                body = self.store.templates.get_template_body(run.template_id).body
                self._of = len(load_template_text(body, source="<stored>").template.steps)
            except Exception:
                self._of = 0
        return self._of or None


def follow_run(store: Store, run_id: str, timeout_s: float | None = None) -> Any | None:
    """Show the run's progress until it ends; returns its final view, or None after ``timeout_s``.
    Ctrl-C stops following (the run goes on) and exits 130."""
    watch = RunWatch(store, run_id)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        if err_console.is_terminal:
            return _follow_bar(watch, deadline)
        return _follow_lines(watch, deadline)
    except KeyboardInterrupt:
        err_console.print(f"stopped following; the run goes on: browserq show {run_id} --follow")
        raise typer.Exit(130) from None


def _ended(run: Any, deadline: float | None) -> bool | None:
    """True: the run ended; None: time is up; False: keep following."""
    if run.terminal:
        return True
    if deadline is not None and time.monotonic() >= deadline:
        return None
    return False


def _follow_lines(watch: RunWatch, deadline: float | None) -> Any | None:
    """Not a terminal: one line on stderr each time the run moves."""
    last = ""
    while True:
        run = watch.run()
        ended = _ended(run, deadline)
        if ended is not False:
            return run if ended else None
        line = watch.where(run).line()
        if line != last:
            err_console.print(Text(line), highlight=False)
            last = line
        time.sleep(POLL_S)


def _follow_bar(watch: RunWatch, deadline: float | None) -> Any | None:
    """A terminal: one live bar (status or step N of M, action, URL), gone when the run ends."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), BarColumn(bar_width=24), TextColumn("{task.description}", markup=False),
               TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("", total=None)
        while True:
            run = watch.run()
            ended = _ended(run, deadline)
            if ended is not False:
                return run if ended else None
            where = watch.where(run)
            done = (where.step - 1) if where.step and where.of else None
            bar.update(task, description=inert(where.line()[:160]),  # Live's own render: no hook total=where.of if done is not None else None,
                       completed=done or 0)
            time.sleep(POLL_S)


__all__ = ["POLL_S", "RunWatch", "Where", "follow_run"]
