"""Taking checkpoints: when one is due, and what it holds.

A checkpoint is what a resumed run needs to continue after a step: the page's URL, the
context's storage, the outputs, warnings and loop passes so far (:class:`Checkpoint`). It is
stored with the step's end, in the same transaction (:class:`browserq.runner.record.StepRecorder`).
Side effects and ``checkpoint: true`` always take one; ``checkpoints: auto`` takes one after a
step that landed on a new page, at most once per BROWSERQ_CHECKPOINT_INTERVAL_MS.
"""

from __future__ import annotations

import json
import time
from typing import Any

from browserq.runner.checkpoint import Checkpoint
from browserq.runner.context import ContextLease
from browserq.runner.parts import RunParts
from browserq.runner.state import RunState
from browserq.runner.storage import digest
from browserq.templates import ActionStep


class Checkpointer:
    """Decides whether a step's end carries a checkpoint, and takes it."""

    def __init__(self, parts: RunParts, context: ContextLease) -> None:
        self.parts = parts
        self.settings = parts.settings
        self.context = context  # the identity's storage is kept when a checkpoint finds it changed

    @staticmethod
    def reason(step: ActionStep, url_before: str, url_after: str, tsettings: Any) -> str | None:
        """``"asked"``: an explicit ``checkpoint: true`` or a side effect (always taken);
        ``"auto"``: (``checkpoints: auto``) a step that landed on a new page; else None."""
        if step.checkpoint or step.side_effect:
            return "asked"
        if tsettings.checkpoints == "auto" and url_after != url_before and url_after.startswith("http"):
            return "auto"
        return None

    def due(self, reason: str | None, state: RunState) -> bool:
        """At most one automatic checkpoint per BROWSERQ_CHECKPOINT_INTERVAL_MS since the run's
        start or its last checkpoint of any kind: a crash redoes at most that much read-only
        work (steps after a checkpoint are redone anyway; no side effect lies among them, each
        is followed by a checkpoint of its own). Asked-for checkpoints are always due."""
        if reason is None:
            return False
        if reason == "asked" or self.settings.checkpoint_interval_ms == 0:
            return True
        waited_ms = (time.monotonic() - state.last_checkpoint_at) * 1000
        return waited_ms >= self.settings.checkpoint_interval_ms

    async def take(self, path: str, state: RunState, *, auto: bool = False) -> dict[str, Any] | None:
        """What a resumed run needs to continue after ``path`` (stored with the step's result).

        ``auto``: None when nothing a resume needs changed since the last checkpoint (same page,
        storage, outputs and warnings): resuming from that one redoes only read-only steps that
        found nothing new, so the write is skipped. An asked-for checkpoint is always written —
        its path is what marks a side effect as done."""
        browser = state.browser
        assert browser.context is not None and browser.page is not None and browser.storage is not None
        timeout_s = state.request.loaded.template.settings.step_timeout_s
        try:  # reading storage runs in the page: a busy page would hold the run here
            storage = await browser.storage.read_within(browser.page, timeout_s)
        except TimeoutError:
            await self.parts.unblock(state)
            storage = await browser.storage.read_within(browser.page, timeout_s)
        outputs = json.loads(json.dumps(state.outputs, default=str))
        storage_digest = digest(storage)
        fingerprint = digest([browser.page.url, storage_digest, outputs, state.warnings])
        if auto and fingerprint == state.checkpoint_digest:
            return None
        if state.request.identity is not None and storage_digest != state.identity_storage_digest:
            await self.context.store_identity_storage(state, storage)  # only when it changed
            state.identity_storage_digest = storage_digest
        state.checkpoint_seq += 1
        state.checkpoint_digest, state.last_checkpoint_at = fingerprint, time.monotonic()
        checkpoint = Checkpoint(
            path=path,
            url=browser.page.url,
            outputs=outputs,
            loops=[dict(loop) for loop in state.loops],
            storage=storage,
            seq=state.checkpoint_seq,
            warnings=list(state.warnings),
            tab=(tab := _tab_of(state)),
            pages=None if tab is None or browser.tabs is None else [page.url for page in browser.tabs.pages],
        )
        secret_box = self.parts.secret_box
        box = secret_box if secret_box.enabled or not state.redactor else self.parts.checkpoint_box
        record = checkpoint.to_record(box, state.redactor)
        resolution = state.request.resolution
        if resolution is not None and resolution.pending_at(path):  # a crash before its start
            record["resolution"] = resolution.to_record()  # resumes with the same decision
        return record


def _tab_of(state: RunState) -> dict[str, int] | None:
    """Which page a checkpoint's URL is from, when the run has several (see Checkpoint.tab)."""
    tabs = state.browser.tabs
    if tabs is None or len(tabs.pages) < 2:
        return None
    index = tabs.index_of(tabs.current)
    return {"index": index if index is not None else -1, "open": len(tabs.pages)}
