"""What an action sees while it runs: the page, its time budget and a way to store artifacts."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.async_api import Page

from browserq.journal import StoredFile
from browserq.redact import Redactor
from browserq.templates import TemplateSettings

#: The shortest timeout handed to one Playwright call once a step's budget is nearly spent.
MIN_CALL_TIMEOUT_S = 0.05

SaveArtifact = Callable[[str, str, bytes, str], Awaitable[StoredFile]]
"""``save(kind, name, data, content_type)`` stores bytes linked to the current step attempt."""
Warn = Callable[[str, str], None]
"""``warn(code, message)``: the step succeeds, but a limit cut its result short (see notices)."""
Note = Callable[[dict[str, Any]], None]
"""``note(event)``: an event for the step attempt's record (``events``), e.g. the locator a
session captured for a ref's node (``{"type": "locator", …}``)."""


def _no_warnings(_code: str, _message: str) -> None:
    return None


def not_noted(_event: dict[str, Any]) -> None:
    return None


@asynccontextmanager
async def not_traced() -> AsyncIterator[None]:
    """Nothing to leave out: the run records no trace."""
    yield


@dataclass
class StepContext:
    """What one step attempt gives its action: the page, its time budget, the artifact door."""

    page: Page
    settings: TemplateSettings
    timeout_s: float
    deadline: float  # time.monotonic() at which the whole run's budget ends
    redactor: Redactor
    save_artifact: SaveArtifact
    step_path: str
    artifact_base: Path  # the run's artifact directory
    #: ``async with ctx.untraced():`` keeps what happens inside out of the run's trace.
    untraced: Callable[[], AbstractAsyncContextManager[None]] = not_traced
    max_output_bytes: int = 10 * 1024 * 1024  # BROWSERQ_MAX_STEP_OUTPUT_BYTES: checked in the page
    warn: Warn = _no_warnings
    #: time.monotonic() at which this step attempt's budget ends: an action making several
    #: Playwright calls gives each what is left of it, so the step as a whole keeps its timeout.
    step_deadline: float | None = None
    #: The run's pages (``switch_tab``, ``close_tab``): an ``actions.tabs.TabControl``.
    tabs: Any = None
    #: The run's file limits and artifacts (``download``, ``upload``): an ``actions.files.RunFiles``.
    files: Any = None
    #: A live session's refs (``selector: "ref=e4.17"``): an ``actions.refs.RefResolver``; None in a run.
    refs: Any = None
    #: Adds an event to the step attempt's record (the run's ``runner.dialogs.DialogAnswerer.note``).
    note: Note = not_noted

    @property
    def timeout_ms(self) -> float:
        """The step's timeout, shrunk to what is left of the run (that part never below 1 s)
        and of this step attempt (never 0, which Playwright reads as "no timeout"). Whole
        milliseconds: Playwright repeats the number in its message ("Timeout 1000ms exceeded")."""
        now = time.monotonic()
        limit = min(self.timeout_s, max(1.0, self.deadline - now))
        if self.step_deadline is not None:
            limit = min(limit, max(MIN_CALL_TIMEOUT_S, self.step_deadline - now))
        return float(max(1, round(limit * 1000)))
