"""Ending a step attempt's record, and telling the run's observers how it went.

Every part that records a step attempt (one step, a probe, a resume, a skip, a wait for a
person) ends it here: the record and the checkpoint after it go through the run's journal in
one transaction, then the observers (progress, metrics, the CLI's lines) hear of it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from browserq.errors import StepFailed
from browserq.journal import StepRecord
from browserq.run_events import StepEvent, StepStarted
from browserq.runner.page import top_level_index
from browserq.runner.parts import RunParts
from browserq.runner.state import RunState


@dataclass(frozen=True)
class Attempted:
    """Which attempt of which step a record is: what the observers are told about it."""

    path: str
    step_id: str | None
    action: str
    number: int
    started: float  # time.monotonic() when it began


class StepRecorder:
    """Ends step attempts' records through the run's journal; tells the observers."""

    def __init__(self, parts: RunParts) -> None:
        self.parts = parts  # its observers are read at each call: a test may swap them

    def started(self, state: RunState, attempted: Attempted, url: str | None) -> None:
        """Tell the run's observers a step attempt begins (``step`` of ``of``: top-level steps)."""
        observers = self.parts.observers
        if not observers:
            return
        observers.step_started(StepStarted(
            run_id=state.request.run_id,
            step_path=attempted.path,
            step=top_level_index(attempted.path) + 1,
            of=len(state.request.loaded.template.steps),
            step_id=attempted.step_id,
            action=attempted.action,
            attempt=attempted.number,
            url=state.redactor.text(url) if url else url,
        ))

    def finished(self, state: RunState, attempted: Attempted, status: str, failure: StepFailed | None,
                 url: str | None) -> None:
        """Tell the run's observers how a step attempt ended (URL and message redacted)."""
        observers = self.parts.observers
        if not observers:
            return
        message = failure.message if failure else None
        if message:
            message = state.redactor.text(message)
        observers.step_finished(
            StepEvent(
                step_path=attempted.path,
                step_id=attempted.step_id,
                action=attempted.action,
                attempt=attempted.number,
                status=status,
                duration_ms=(time.monotonic() - attempted.started) * 1000,
                error_code=failure.code.code if failure else None,
                error_message=message,
                url=state.redactor.text(url) if url is not None else None,
                run_id=state.request.run_id,
            )
        )

    async def end(
        self,
        state: RunState,
        record: StepRecord,
        attempted: Attempted,
        status: str,
        failure: StepFailed | None = None,
        output: Any = None,
        checkpoint: dict[str, Any] | None = None,
        warnings: list[dict[str, Any]] | None = None,
    ) -> None:
        """Finish the attempt's record and, in the same transaction, the checkpoint after it.

        A record the database refuses fails the run ``STORE_WRITE_FAILED`` (the journal has
        replaced it by one that says so): never a step left ``started`` behind a crash."""
        page = state.browser.page
        url = page.url if page and not page.is_closed() else None
        events = state.browser.dialogs.take() if state.browser.dialogs is not None else None
        try:
            await state.journal.step_finished(
                record, status=status, url_after=url, failure=failure, output=output,
                checkpoint=checkpoint, warnings=warnings, durable=checkpoint is not None,
                events=events,
            )
        except StepFailed:  # STORE_WRITE_FAILED: the database refused the record
            state.fail_at(record, attempted.path)
            raise
        self.finished(state, attempted, status, failure, url)
