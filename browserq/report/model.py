"""What a run report shows, as plain frozen values: :mod:`~browserq.report.collect` fills them
from the store and the artifact store, :mod:`~browserq.report.render` turns them into HTML.

Every string here may come from a page (titles, text, console lines, URLs, outputs): it is
hostile input and is only ever written out escaped.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Fact:
    """One line of the run header: a label and its value (``mono`` for ids, hashes, JSON)."""

    label: str
    value: str
    mono: bool = False


@dataclass(frozen=True, slots=True)
class Bar:
    """One step attempt on the timeline: where it starts and how wide it is, in % of the run."""

    status: str
    left_pct: float
    width_pct: float
    label: str  # short text inside a wide enough bar ("648 ms", "try 2 · 1.0 s")
    title: str  # the hover text: action, try, duration, status, error


@dataclass(frozen=True, slots=True)
class Row:
    """One step of the template (its path), with a bar per attempt: retries sit side by side."""

    step_path: str
    name: str
    action: str
    bars: tuple[Bar, ...]


@dataclass(frozen=True, slots=True)
class Tick:
    left_pct: float
    label: str


@dataclass(frozen=True, slots=True)
class Timeline:
    rows: tuple[Row, ...]
    ticks: tuple[Tick, ...]
    total_ms: float


@dataclass(frozen=True, slots=True)
class StepLine:
    """One step attempt in the table under the timeline."""

    step_path: str
    step_id: str
    action: str
    attempt: int
    run_attempt: int
    status: str
    start: str  # offset from the run's start, "+1.23 s"
    duration: str
    error: str
    warnings: tuple[str, ...]
    url_after: str
    events: tuple[str, ...] = ()  # the dialogs the attempt answered, one line each


@dataclass(frozen=True, slots=True)
class Image:
    """A PNG/JPEG artifact, inline as a ``data:`` URI when it could be read and is not too big."""

    caption: str
    location: str
    size: int
    data_uri: str | None
    note: str = ""  # why it is not inline


@dataclass(frozen=True, slots=True)
class ConsoleLine:
    at: str
    type: str
    text: str


@dataclass(frozen=True, slots=True)
class Request:
    at: str
    method: str
    status: str
    resource_type: str
    url: str
    failed: bool


@dataclass(frozen=True, slots=True)
class Document:
    """The DOM of the failing moment: a download link and (a prefix of) its escaped source."""

    location: str
    size: int
    download_uri: str | None
    source: str
    truncated: bool
    note: str = ""


@dataclass(frozen=True, slots=True)
class JsonBlock:
    """Any other JSON artifact (blocked requests, …), pretty-printed and cut to a preview."""

    title: str
    location: str
    text: str
    truncated: bool


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The failure snapshot: what the page looked like, held, logged and loaded when it failed."""

    step_path: str
    screenshot: Image | None
    dom: Document | None
    console: tuple[ConsoleLine, ...] | None
    network: tuple[Request, ...] | None
    extra: tuple[JsonBlock, ...] = ()
    notes: tuple[str, ...] = ()  # parts that could not be read, and why


@dataclass(frozen=True, slots=True)
class Trace:
    step_path: str
    location: str
    size: int
    command: str  # ``playwright show-trace <local path>``


@dataclass(frozen=True, slots=True)
class OutputPreview:
    """One output: a table of its first records, or its JSON cut to a preview."""

    name: str
    summary: str  # "20 records", "string, 31 characters"
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    more_rows: int = 0
    json_text: str = ""
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class ArtifactLine:
    kind: str
    step_path: str
    size: int
    location: str


@dataclass(frozen=True, slots=True)
class HandoffLine:
    """One wait for a person, as the report lists it."""

    step_path: str
    kind: str  # step | trigger
    message: str
    until: str  # what ended it by itself, or "Continue"
    started: str
    waited: str
    outcome: str
    inputs: int


@dataclass(frozen=True, slots=True)
class WebhookLine:
    """One run event POSTed to a receiver (its URL by host only)."""

    event: str
    target: str
    status: str
    attempts: int
    last_error: str


@dataclass(frozen=True, slots=True)
class SessionEntry:
    """One line of a session's timeline: a command (``kind`` ``command``), or a moment between
    them: ``navigation`` (its page changed: earlier refs stale), ``takeover``, ``pause``."""

    kind: str
    message: str = ""
    n: int = 0
    at: str = ""  # offset from the session's first command, "+1.2 s"
    action: str = ""
    target: str = ""  # "ref e4.17", a selector, a locator mapping, a URL
    outcome: str = ""  # "succeeded" or the error code
    ok: bool = True
    status: str = ""
    duration: str = ""
    side_effect: bool = False


@dataclass(frozen=True, slots=True)
class SessionEnd:
    status: str
    code: str
    why: str


@dataclass(frozen=True, slots=True)
class SessionTimeline:
    entries: tuple[SessionEntry, ...]
    commands: int
    failed: int
    end: SessionEnd


@dataclass(frozen=True, slots=True)
class Report:
    run_id: str
    title: str  # template@version
    status: str
    error: str  # "CODE at step 3: message", or ""
    stats: tuple[Fact, ...]  # the headline numbers
    facts: tuple[Fact, ...]
    warnings: tuple[str, ...]
    history: tuple[str, ...]
    timeline: Timeline
    steps: tuple[StepLine, ...]
    screenshots: tuple[Image, ...]
    snapshots: tuple[Snapshot, ...]
    traces: tuple[Trace, ...]
    outputs: tuple[OutputPreview, ...]
    artifacts: tuple[ArtifactLine, ...]
    extras: tuple[JsonBlock, ...]  # JSON evidence not part of a failure snapshot
    generated_at: str
    handoffs: tuple[HandoffLine, ...] = ()  # waits for a person
    webhooks: tuple[WebhookLine, ...] = ()  # events sent to notify URLs
    session: SessionTimeline | None = None  # an agent session's commands, in order
