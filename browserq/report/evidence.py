"""Artifacts as the report shows them: images inline, the failure snapshot's DOM, console and
network, other JSON evidence, and the command that opens each trace.

Artifacts are read only through the artifact store (:func:`browserq.store.artifacts.artifact_store`:
``read_bytes``, ``local_path``, ``location``), never from the artifacts directory itself, so a
report works the same whether they sit on this disk or in an object store. An artifact that
cannot be read (deleted, too big, unreachable) becomes a note in the report, never a failure.
"""

from __future__ import annotations

import base64
import json
import shlex
from datetime import UTC, datetime
from typing import Any

from browserq.errors import BrowserqError
from browserq.report.model import ConsoleLine, Document, Image, JsonBlock, Request, Snapshot, Trace

#: Images larger than this are linked (their location), not inlined: the report stays openable.
MAX_INLINE_IMAGE_BYTES = 8 * 1024 * 1024
#: The DOM's source shown in the page (its download link has all of it, up to MAX_DOM_DOWNLOAD_BYTES).
MAX_DOM_PREVIEW_CHARS = 200_000
MAX_DOM_DOWNLOAD_BYTES = 16 * 1024 * 1024
#: JSON evidence (console, network, blocked requests) read at most this big, shown at most this long.
MAX_JSON_BYTES = 4 * 1024 * 1024
MAX_JSON_PREVIEW_CHARS = 20_000
#: Formats a browser decodes without running anything (no SVG).
IMAGE_TYPES = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"RIFF": "image/webp"}
#: What the failure snapshot is made of (browserq/runner/evidence.py writes them).
SNAPSHOT_KINDS = ("failure_screenshot", "dom", "console", "network")
#: Errors of reading one artifact: it is then a note in the report.
UNREADABLE = (OSError, BrowserqError, ValueError)


def trace_command(local_path: Any) -> str:
    """The shell command that opens a trace in Playwright's viewer (the path quoted)."""
    return f"playwright show-trace {shlex.quote(str(local_path))}"


def unreadable(location: str, exc: BaseException) -> str:
    return f"{location} could not be read: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"


def image(files: Any, artifact: Any, caption: str) -> Image:
    """A PNG/JPEG/WebP artifact as a ``data:`` URI (kind sniffed from its bytes), or a note."""
    location = files.location(artifact.path)
    if artifact.size > MAX_INLINE_IMAGE_BYTES:
        return Image(caption, location, artifact.size, None, f"not inlined ({artifact.size:,} bytes): {location}")
    try:
        data = files.read_bytes(artifact.path)
    except UNREADABLE as exc:
        return Image(caption, location, artifact.size, None, unreadable(location, exc))
    mime = next((m for magic, m in IMAGE_TYPES.items() if data.startswith(magic)), None)
    if mime is None:
        return Image(caption, location, artifact.size, None, f"not an image this report shows: {location}")
    return Image(caption, location, len(data), f"data:{mime};base64,{base64.b64encode(data).decode()}")


def document(files: Any, artifact: Any) -> Document:
    """The DOM of the failing moment: a download link (never rendered) and its source as text."""
    location = files.location(artifact.path)
    if artifact.size > MAX_DOM_DOWNLOAD_BYTES:
        return Document(location, artifact.size, None, "", False, f"too big to embed: {location}")
    try:
        data = files.read_bytes(artifact.path)
    except UNREADABLE as exc:
        return Document(location, artifact.size, None, "", False, unreadable(location, exc))
    text = data.decode("utf-8", errors="replace")
    # application/octet-stream: the link downloads the file, a browser never renders it here.
    uri = f"data:application/octet-stream;base64,{base64.b64encode(data).decode()}"
    return Document(location, len(data), uri, text[:MAX_DOM_PREVIEW_CHARS], len(text) > MAX_DOM_PREVIEW_CHARS)


def read_json(files: Any, artifact: Any) -> Any:
    """The parsed content of a JSON artifact (raises one of UNREADABLE)."""
    if artifact.size > MAX_JSON_BYTES:
        raise ValueError(f"{artifact.size:,} bytes, more than the report reads ({MAX_JSON_BYTES:,})")
    return json.loads(files.read_bytes(artifact.path).decode("utf-8", errors="replace"))


def json_block(files: Any, artifact: Any, title: str) -> JsonBlock:
    location = files.location(artifact.path)
    try:
        text = json.dumps(read_json(files, artifact), indent=2, ensure_ascii=False, default=str)
    except UNREADABLE as exc:
        return JsonBlock(title, location, unreadable(location, exc), False)
    return JsonBlock(title, location, text[:MAX_JSON_PREVIEW_CHARS], len(text) > MAX_JSON_PREVIEW_CHARS)


def moment(t: Any, origin: datetime | None) -> str:
    """An entry's time (epoch seconds) as an offset from the run's start, else its UTC clock time."""
    if not isinstance(t, int | float) or isinstance(t, bool):
        return ""
    try:
        at = datetime.fromtimestamp(t, UTC)
    except (OverflowError, OSError, ValueError):
        return ""
    if origin is not None:
        return f"+{(at - origin).total_seconds():.2f} s"
    return at.strftime("%H:%M:%S.%f")[:-3]


def _entries(value: Any) -> list[dict[str, Any]]:
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def console_lines(value: Any, origin: datetime | None) -> tuple[ConsoleLine, ...]:
    return tuple(ConsoleLine(moment(e.get("t"), origin), str(e.get("type", "")), str(e.get("text", "")))
                 for e in _entries(value))


def requests(value: Any, origin: datetime | None) -> tuple[Request, ...]:
    found = []
    for e in _entries(value):
        status = e.get("status")
        failed = status is None or (isinstance(status, int) and status >= 400)
        shown = str(status) if status is not None else str(e.get("failure") or "failed")
        found.append(Request(moment(e.get("t"), origin), str(e.get("method", "")), shown,
                             str(e.get("resource_type", "")), str(e.get("url", "")), failed))
    return tuple(found)


def snapshot(files: Any, step_path: str, parts: list[Any], origin: datetime | None) -> Snapshot:
    """The failure snapshot of one step attempt from its artifacts (any part may be missing)."""
    by_kind = {a.kind: a for a in parts}
    notes: list[str] = []
    shot = by_kind.get("failure_screenshot")
    dom = by_kind.get("dom")

    def listed(kind: str, parse: Any) -> Any:
        artifact = by_kind.get(kind)
        if artifact is None:
            return None
        try:
            return parse(read_json(files, artifact), origin)
        except UNREADABLE as exc:
            notes.append(unreadable(files.location(artifact.path), exc))
            return None

    extra = tuple(json_block(files, a, a.kind.replace("_", " "))
                  for a in parts if a.kind not in SNAPSHOT_KINDS and a.content_type == "application/json")
    return Snapshot(
        step_path=step_path,
        screenshot=image(files, shot, f"step {step_path} when it failed") if shot else None,
        dom=document(files, dom) if dom else None,
        console=listed("console", console_lines),
        network=listed("network", requests),
        extra=extra,
        notes=tuple(notes),
    )


def trace(files: Any, artifact: Any, step_path: str) -> Trace:
    """A trace zip: where it is, and the command that opens it from a file on this host."""
    location = files.location(artifact.path)
    try:
        command = trace_command(files.local_path(artifact.path))
    except UNREADABLE as exc:
        command = f"# {unreadable(location, exc)}"
    return Trace(step_path=step_path, location=location, size=artifact.size, command=command)
