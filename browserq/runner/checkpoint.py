"""Checkpoints: what a run needs to continue elsewhere, and how to find its place again.

A step path names one execution of one step: ``"2"`` is top-level step 2, ``"1[3].0"`` is step 0
of pass 3 of the repeat at step 1. A checkpoint records the path of the last step it covers, the
page URL, the browser storage (cookies, localStorage, IndexedDB), the outputs so far and the state
of every enclosing repeat. A resumed run restores the storage in a fresh context, opens the URL,
and skips every step up to and including that path.

When one is taken (:meth:`browserq.runner.checkpointer.Checkpointer.due`): after every
side effect and ``checkpoint: true`` step, and after a step that landed on a new page at most once
per ``BROWSERQ_CHECKPOINT_INTERVAL_MS``. Steps after the last checkpoint are redone on resume;
none of them is a side effect (each has its own checkpoint), so fewer automatic checkpoints only
mean more read-only work redone. How its storage is read: :mod:`browserq.runner.storage`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from browserq.errors import ConfigError
from browserq.redact import Redactor
from browserq.secrets import SecretBox

_SEGMENT = re.compile(r"^(\d+)(?:\[(\d+)\])?$")
CHECKPOINT_VERSION = 1
#: ``record["key"]`` of a checkpoint encrypted with a key only its own process had.
PROCESS_KEY = "process"


def parse_path(path: str) -> list[tuple[int, int | None]]:
    """``"1[3].0"`` → ``[(1, 3), (0, None)]`` (step index, repeat pass or None)."""
    segments = []
    for part in path.split("."):
        match = _SEGMENT.match(part)
        if not match:
            raise ValueError(f"not a step path: {path!r}")
        segments.append((int(match.group(1)), int(match.group(2)) if match.group(2) else None))
    return segments


def path_key(path: str) -> list[tuple[int, int]]:
    """Execution order of step paths: ``"1"`` (a repeat) < ``"1[2].0"`` < ``"1[3].0"`` < ``"2"``."""
    return [(index, repeat_pass or 0) for index, repeat_pass in parse_path(path)]


def region_end(path: str) -> list[tuple[int, int]]:
    """The first key after the step at ``path`` and everything inside it (a repeat's, a block's)."""
    key = path_key(path)
    index, _ = key[-1]
    return [*key[:-1], (index + 1, 0)]


@dataclass(frozen=True)
class Resolution:
    """A person's decision on a ``needs_review`` run, retried from a step after the unknown one:
    the steps from ``unknown`` up to (not including) ``start`` are skipped, each recorded as
    skipped by ``by``. Kept in ``runs.checkpoint`` (key ``resolution``) until the run is past
    ``start``, so a crash before then resumes with the same decision."""

    unknown: str  # the side effect whose outcome was unknown
    start: str  # the step the retry starts from
    by: str
    reason: str | None = None

    def skips(self, path: str) -> bool:
        """Whether the step at ``path`` (and all inside it) lies in the range the person skipped."""
        if "~" in path:  # login steps, a resume: not steps of the template's own list
            return False
        return path_key(self.unknown) <= path_key(path) and region_end(path) <= path_key(self.start)

    def pending_at(self, path: str) -> bool:
        """Whether a checkpoint after ``path`` must still carry the decision (``start`` not reached)."""
        return path_key(path) < path_key(self.start)

    def why(self) -> str:
        said = f": {self.reason}" if self.reason else ""
        return f"skipped by {self.by}'s resolution (retry from step {self.start}){said}"

    def to_record(self) -> dict[str, Any]:
        return {"unknown": self.unknown, "start": self.start, "by": self.by, "reason": self.reason}

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> Resolution | None:
        if not record or "resolution" not in record:
            return None
        data = record["resolution"]
        return cls(unknown=data["unknown"], start=data["start"], by=data["by"], reason=data.get("reason"))


@dataclass
class Checkpoint:
    path: str  # the last step this checkpoint covers
    url: str
    outputs: dict[str, Any]
    loops: list[dict[str, Any]]  # enclosing repeats: index, iteration, last_pass
    storage: dict[str, Any] | None  # Playwright storage_state (cookies, origins incl. IndexedDB)
    seq: int = 0
    at: float = field(default_factory=time.time)
    warnings: list[dict[str, Any]] = field(default_factory=list)  # the run's so far (notices)
    #: ``{"index", "open"}`` when the run had several pages: ``url`` is the current one's, the
    #: page a resume continues on; ``pages`` the URL of each, oldest first (a resume opens them
    #: all again, in that order; who opened whom is not restored).
    tab: dict[str, int] | None = None
    pages: list[str] | None = None

    def to_record(self, box: SecretBox, redactor: Redactor | None = None) -> dict[str, Any]:
        """The JSON kept in ``runs.checkpoint``.

        The clear part (path, loops, the page URL with secrets masked) is for people and
        ``browserq show``; what a resume needs — outputs, storage and the real URL — is encrypted
        when ``box`` has a key (cookies are credentials, outputs may hold what a logged-in page
        showed, the URL may carry a token). A run with secrets is never checkpointed in clear: the
        runner passes a process-only box when BROWSERQ_SECRET_KEY is unset, and a box without any
        key gets the state with its secrets masked (a resume then sees the masks).
        """
        redactor = redactor or Redactor()
        record: dict[str, Any] = {
            "v": CHECKPOINT_VERSION,
            "path": self.path,
            "url": redactor.text(self.url),
            "loops": self.loops,
            "seq": self.seq,
            "at": self.at,
            "warnings": self.warnings,
        }
        if self.tab is not None:
            record["tab"] = self.tab
        state: dict[str, Any] = {"outputs": self.outputs, "storage": self.storage, "url": self.url}
        if self.pages is not None:  # URLs may carry tokens: never in the clear part
            state["pages"] = self.pages
        if box.enabled:
            record["state_encrypted"] = box.encrypt_json(state)
            if box.ephemeral:
                record["key"] = PROCESS_KEY
        else:
            record["state"] = redactor.data(state)
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any], box: SecretBox) -> Checkpoint:
        if "state_encrypted" in record:
            if record.get("key") == PROCESS_KEY and not box.ephemeral:
                raise ConfigError(
                    "this run's checkpoint was encrypted with a key that existed only in the process "
                    "that ran it (BROWSERQ_SECRET_KEY was unset), so it cannot resume elsewhere; "
                    "set BROWSERQ_SECRET_KEY to make runs with secrets resumable"
                )
            state = box.decrypt_json(record["state_encrypted"], why="this run's checkpoint is encrypted")
        else:
            state = record.get("state") or {}
        return cls(
            path=record["path"],
            url=state.get("url") or record["url"],
            outputs=state.get("outputs") or {},
            loops=record.get("loops") or [],
            storage=state.get("storage"),
            seq=record.get("seq", 0),
            at=record.get("at", 0.0),
            warnings=record.get("warnings") or [],
            tab=record.get("tab"),
            pages=state.get("pages"),
        )


class ResumeCursor:
    """Walks a checkpoint's path while the runner descends, telling it what to skip."""

    def __init__(self, checkpoint: Checkpoint) -> None:
        self.segments = parse_path(checkpoint.path)
        self.loops = checkpoint.loops
        self.depth = 0
        self.active = True

    def at_this_level(self) -> tuple[int, int | None] | None:
        if not self.active or self.depth >= len(self.segments):
            return None
        return self.segments[self.depth]

    def descend(self) -> None:
        self.depth += 1

    def finish(self) -> None:
        """The checkpointed step has been passed: from here on, everything runs."""
        self.active = False
