"""A run's Playwright trace, recorded in chunks so that stretches can be left out of it.

Typing a secret key by key (``human_input: true``) is one trace action per key, each with DOM
snapshots before and after: joined, the actions spell the secret, and the snapshots hold every
prefix of it — no scrubbing of the finished file can recognise "the first 11 characters of the
password". So the runner does not record that stretch at all: :meth:`TraceRecorder.paused`
ends the current trace chunk (saved to a part file), the keys are typed, and a new chunk starts.
At the end the parts are merged into one zip that ``playwright show-trace`` opens as one trace:
the viewer loads every ``<name>.trace`` / ``<name>.network`` / ``<name>.stacks`` triple of a zip
and shares the ``resources/`` between them.

When tracing starts is the template's ``trace:`` (:func:`open_trace`). ``always`` traces every
run from its first step. ``on_failure`` starts at the first retry: a step attempt after a failed
one (a retry in place, the try after a side-effect probe, the step again after a new login)
starts the trace, and a retried run (its lease attempt > 1, a resume included) is traced from its
first step. A run whose steps all succeed at the first try never starts tracing: recording
costs time even when the trace is thrown away (240–310 ms of CPU per iteration of
bench/scrape_and_form.py). A failed run always has its failure snapshot (screenshot, DOM,
console, network) besides.
"""

from __future__ import annotations

import zipfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import structlog
from playwright.async_api import BrowserContext

from browserq.browsers.errors import first_line

log = structlog.get_logger(__name__)

_TRIPLE = ("trace", "network", "stacks")


#: The template's ``trace:`` values that record anything.
ALWAYS, ON_FAILURE = "always", "on_failure"


async def open_trace(
    context: BrowserContext, scratch_dir: Path, mode: str, *, retried_run: bool
) -> TraceRecorder | None:
    """The run's recorder for ``trace: mode`` (None for ``off``), started now when the whole run
    is to be traced: ``always``, or ``on_failure`` in a run that is itself a retry."""
    if mode not in (ALWAYS, ON_FAILURE):
        return None
    recorder = TraceRecorder(context, scratch_dir)
    if mode == ALWAYS or retried_run:
        await recorder.start()
    return recorder


class TraceRecorder:
    """Starts, pauses and stops one context's tracing; parts go to ``scratch_dir``."""

    def __init__(self, context: BrowserContext, scratch_dir: Path) -> None:
        self.context = context
        self.scratch_dir = scratch_dir
        self.parts: list[Path] = []
        self.started = False  # tracing.start() was called (on_failure: only from a retry on)
        self.recording = False

    async def start(self) -> None:
        """Start tracing the context (once; later calls do nothing)."""
        if self.started:
            return
        # DOM snapshots, not the screencast filmstrip: the filmstrip tripled tracing's cost
        # (bench/scrape_and_form.py), and a failure keeps its own full-page screenshot.
        await self.context.tracing.start(screenshots=False, snapshots=True)
        self.started = True
        self.recording = True

    async def retrying(self) -> None:
        """A step is tried again after a failure: from here on the run is traced, so that a
        run that fails after retrying has a trace of its failing attempts. Evidence is best
        effort: a context that cannot start tracing (it is closing, the browser is gone) fails
        the retry through the retry itself, never through the trace."""
        try:
            await self.start()
        except Exception as exc:
            log.warning("could not start tracing at the retry", error=first_line(exc))

    def _next_part(self) -> Path:
        self.scratch_dir.mkdir(parents=True, exist_ok=True)
        return self.scratch_dir / f".trace-{len(self.parts)}.zip.partial"

    @asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """Leave what happens inside out of the trace (the chunk so far is kept)."""
        if not self.recording:
            yield
            return
        part = self._next_part()
        await self.context.tracing.stop_chunk(path=part)
        self.parts.append(part)
        self.recording = False
        try:
            yield
        finally:
            await self.context.tracing.start_chunk()
            self.recording = True

    async def stop(self, keep: bool) -> Path | None:
        """Stop tracing; with ``keep``, the merged trace zip (a scratch file the caller owns).
        None also when tracing never started (``on_failure`` without a retry)."""
        if not self.started:
            return None
        try:
            if not keep:
                await self.context.tracing.stop()
                return None
            if self.recording:
                part = self._next_part()
                await self.context.tracing.stop(path=part)
                self.parts.append(part)
            else:
                await self.context.tracing.stop()
            merged = self.scratch_dir / ".trace.zip.partial"
            merge_trace_parts(self.parts, merged)
            return merged
        finally:
            self.started = self.recording = False
            self.discard()

    def discard(self) -> None:
        """Delete the chunk files (unscrubbed): after the merge, or when the run ends without it."""
        for part in self.parts:
            part.unlink(missing_ok=True)
        self.parts = []
        try:  # a folder made only for the chunks (an object store's scratch) goes with them
            self.scratch_dir.rmdir()
        except OSError:
            pass  # not empty (the run's artifacts beside it, the merged trace), or never made


def merge_trace_parts(parts: list[Path], target: Path) -> None:
    """One zip from the chunk zips: part *i*'s ``trace.*`` become ``trace-i.*``, resources shared."""
    written: set[str] = set()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for index, part in enumerate(parts):
            with zipfile.ZipFile(part) as src:
                for info in src.infolist():
                    name = info.filename
                    stem, _dot, ext = name.rpartition(".")
                    if index and stem == "trace" and ext in _TRIPLE:
                        name = f"trace-{index}.{ext}"
                    if name in written:  # content-addressed resources: the same name, same bytes
                        continue
                    written.add(name)
                    out.writestr(name, src.read(info))
