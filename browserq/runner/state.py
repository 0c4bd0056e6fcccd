"""What a run is given, what it gives back, and what it knows while it runs.

:class:`RunRequest` and :class:`RunOutcome` are the runner's contract with the execution layer;
:class:`StepResult` is what one step gives back (:class:`browserq.runner.attempt.StepAttempt`);
what a live listener sees is in :mod:`browserq.run_events`. :class:`RunState` is the one attempt's memory,
in named parts: the browser side (:class:`BrowserParts`), where it failed
(:class:`FailurePoint`), how it was interrupted (:class:`Interrupt`) and the progress a checkpoint
keeps (outputs, warnings, loops).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from playwright.async_api import BrowserContext, Page

from browserq.actions.files import RunFiles
from browserq.actions.outputs import OutputBudget
from browserq.browsers.domains import BlockLog
from browserq.errors import Codes, ErrorClass, StepFailed
from browserq.journal import IdentityLease, RunJournal, StepRecord
from browserq.journal.entries import Entry
from browserq.limits import BlockStats, NavigationGate
from browserq.proxies import Proxy
from browserq.redact import Redactor
from browserq.runner.capture import PageActivity
from browserq.runner.checkpoint import Checkpoint, Resolution, ResumeCursor
from browserq.runner.dialogs import DialogAnswerer
from browserq.runner.storage import StorageReader
from browserq.runner.tabs import Tabs
from browserq.runner.trace import TraceRecorder
from browserq.runner.watchdog import PageWatchdog
from browserq.templates import LoadedTemplate


@dataclass(frozen=True)
class RunRequest:
    """Everything needed to execute a run that already has its record in the store."""

    run_id: str
    run_attempt: int
    loaded: LoadedTemplate
    params: dict[str, Any]  # validated, secrets in clear (memory only)
    secret_names: frozenset[str] = frozenset()
    token: int | None = None  # the lease's fencing token: every write carries it
    lease_ttl_s: float = 30.0
    resume: Checkpoint | None = None  # continue after this checkpoint
    unknown_side_effects: frozenset[str] = frozenset()  # paths whose outcome is unknown
    resolution: Resolution | None = None  # a person's decision: skip from the unknown step to a later one
    identity: IdentityLease | None = None  # the visitor this run plays (leased to it alone)
    identity_storage: dict[str, Any] | None = None  # that identity's saved storage, decrypted


@dataclass
class RunOutcome:
    """How the attempt ended; the caller records the run's final status from it."""

    run_id: str
    status: str
    outputs: dict[str, Any]
    error_code: str | None = None
    error_message: str | None = None
    error_step_path: str | None = None
    lease_lost: bool = False  # another worker took the run over: nothing may be written
    #: The database stayed away past the store's retry window: nothing could be written; the
    #: caller retries the run later (without the database), from its last checkpoint.
    store_unavailable: bool = False
    #: The worker is stopping and the run was waiting for a person: re-enqueue it (the caller).
    handed_over: bool = False
    #: ``[{step, code, message}]``: where a limit cut the result short (see actions.notices).
    warnings: list[dict[str, Any]] = field(default_factory=list)
    #: The journal's records still held back — only a completed run's, which decide() always
    #: finishes: RunEnds.finish writes them with the run's end (a hand-back, before it).
    journal_tail: list[Entry] = field(default_factory=list, repr=False, compare=False)

    @property
    def error_class(self) -> ErrorClass | None:
        """The policy of the run's error code, if it failed."""
        return Codes.by_name(self.error_code).error_class if self.error_code else None

    def as_result(self) -> dict[str, Any]:
        """The JSON-serializable value a Celery task returns."""
        error = None
        if self.error_code:
            error = {"code": self.error_code, "message": self.error_message, "step": self.error_step_path}
        return {
            "run_id": self.run_id,
            "status": self.status,
            "outputs": self.outputs,
            "error": error,
            "warnings": self.warnings,
        }


class StepOutcome(Enum):
    """How one step ended, all its attempts and retries included."""

    SUCCEEDED = "succeeded"  # the action ran
    SKIPPED = "skipped"  # an ``optional`` step whose element is missing
    RECOVERED = "recovered"  # a side effect of unknown outcome: its probe shows it happened
    CONTINUED = "continued"  # it failed; ``continue_on_error`` lets the run go on
    FAILED = "failed"  # it failed: a run fails here (``failure`` says why)
    NEEDS_REVIEW = "needs_review"  # a side effect may or may not have happened: a person decides


@dataclass(frozen=True)
class StepResult:
    """What :meth:`StepAttempt.run` gives back: the outcome, its failure, the step's output."""

    outcome: StepOutcome
    failure: StepFailed | None = None
    output: Any = None


@dataclass
class BrowserParts:
    """The browser side of one run: its context and page, and what guards and watches them."""

    context: BrowserContext | None = None
    page: Page | None = None
    crashed: bool = False
    page_dropped: bool = False  # the page stayed unresponsive and was closed
    watchdog: PageWatchdog | None = None  # probes and unblocks the run's page
    trace: TraceRecorder | None = None
    domains: BlockLog | None = None  # what the browser refused to send (allowed_domains)
    gate: NavigationGate | None = None  # the fleet-wide per-domain rate limits
    blocked: BlockStats | None = None  # resources blocked by block_resources
    proxy: Proxy | None = None
    activity: PageActivity | None = None  # the last console lines and responses, for a snapshot
    storage: StorageReader | None = None  # reads the context's storage for checkpoints
    tabs: Tabs | None = None  # every page of the run; sets page and watchdog to the current one
    dialogs: DialogAnswerer | None = None  # answers alert/confirm/prompt; keeps them for the record
    refs: Any = None  # a live session's refs (browserq.sessions.RefBook); None in a template run


@dataclass
class FailurePoint:
    """Where the run failed: the step attempt that evidence is linked to, and its path."""

    record: StepRecord | None = None
    path: str | None = None


@dataclass
class Interrupt:
    """Set by the heartbeat: ``"cancel"`` (with the reason asked), ``"lease_lost"``,
    ``"handover"`` (the worker is stopping while the run waits for a person: see runner.drain),
    or ``"store_unavailable"`` (the database stayed away past the retry window; ``reason``)."""

    kind: str | None = None
    reason: str = ""


class Navigations:
    """Counts main-frame navigations per page, so the handoff trigger is checked after a step
    that loaded a document (a same-URL reload or a form POST included), not after every step."""

    def __init__(self) -> None:
        self.pages: dict[int, int] = {}

    def watch(self, page: Page) -> None:
        key = id(page)
        self.pages[key] = 0

        def on_navigated(frame: Any) -> None:
            if frame == page.main_frame:
                self.pages[key] = self.pages.get(key, 0) + 1

        page.on("framenavigated", on_navigated)

    def take(self, key: int) -> bool:
        """Whether the page navigated since the last call (and reset)."""
        seen = self.pages.get(key, 0)
        self.pages[key] = 0
        return seen > 0


@dataclass
class HumanWaits:
    """The run attempt's waits for people: time waited (given back to timeout_s), how often the
    trigger fired, the current wait's inputs, and the run's clock to hold while a person works."""

    waited_s: float = 0.0
    trigger_waits: int = 0
    inputs: int = 0
    waiting: bool = False  # a wait is on now (the heartbeat hands such a run over when draining)
    run_timer: Any = None  # the asyncio.Timeout of timeout_s (set by the runner)
    base_deadline: float = 0.0  # state.deadline before any wait
    navigations: Navigations = field(default_factory=Navigations)
    #: What people typed in this run's waits, scrubbed from its trace (browserq.live.typed).
    typed: Redactor = field(default_factory=Redactor)


@dataclass
class RunState:
    """One run attempt's memory, from setup to outcome."""

    request: RunRequest
    redactor: Redactor
    deadline: float  # time.monotonic() at which timeout_s ends
    journal: RunJournal
    browser: BrowserParts = field(default_factory=BrowserParts)
    failed: FailurePoint = field(default_factory=FailurePoint)
    interrupt: Interrupt = field(default_factory=Interrupt)
    outputs: dict[str, Any] = field(default_factory=dict)
    warnings: list[dict[str, Any]] = field(default_factory=list)  # run_warning() dicts, in order
    loops: list[dict[str, Any]] = field(default_factory=list)
    budget: OutputBudget | None = None  # the run's outputs within BROWSERQ_MAX_RUN_OUTPUT_BYTES
    cursor: ResumeCursor | None = None
    checkpoint_seq: int = 0
    last_checkpoint_at: float = field(default_factory=time.monotonic)  # the automatic ones' interval
    checkpoint_digest: str | None = None  # what the last checkpoint held (page, storage, outputs)
    identity_storage_digest: str | None = None  # the identity's storage as last stored
    relogged: set[str] = field(default_factory=set)  # steps retried after a new login
    last_navigation: str | None = None  # the URL the last navigate step asked for
    files: RunFiles | None = None  # download/upload limits and the bytes downloaded so far
    human: HumanWaits = field(default_factory=HumanWaits)  # handoffs (browserq.runner.handoff)

    def scope(self) -> dict[str, Any]:
        """What ``${...}`` in a step sees: the params, the outputs so far, the run and the loop."""
        scope: dict[str, Any] = dict(self.request.params)
        scope["outputs"] = self.outputs
        scope["run"] = {"id": self.request.run_id, "attempt": self.request.run_attempt}
        if self.loops:
            scope["loop"] = {k: self.loops[-1][k] for k in ("index", "iteration")}
        return scope

    def fail_at(self, record: StepRecord | None, path: str | None) -> None:
        """Remember the step the run fails at (its evidence is linked to ``record``)."""
        self.failed.record, self.failed.path = record, path
