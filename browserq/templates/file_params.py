"""``file`` params: a file the producer passes, stored with the run so any worker can upload it.

A producer passes one of (in Python; a JSON sender uses the last form):

* a :class:`pathlib.Path` — a file on the producer's host, read there (a plain string is never
  read as a path, so a message can never make a worker read its own disk);
* ``bytes`` — named after the param;
* ``{"filename": "cv.pdf", "content": b"..."}`` or ``{"filename": ..., "content_base64": "..."}``
  (optionally ``"content_type"``); the latter also as JSON text (``browserq run -p cv=@cv.json``).

At most ``BROWSERQ_MAX_FILE_PARAM_BYTES`` each, checked at the producer (``ParamError`` naming the
param and the limit). The producer stores the bytes as the run's artifact
``inputs/<param>/<filename>`` (kind ``input``); the run's params hold only its reference
``{artifact, filename, size, sha256, content_type}``, which ``upload`` takes (``file: "${cv}"``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from browserq.errors import StepFailed
from browserq.guards import safe_filename, upload_path_problem
from browserq.templates.interpolate import make_scope, render

if TYPE_CHECKING:  # pragma: no cover
    from browserq.templates.file_steps import UploadStep
    from browserq.templates.model import Template

#: Default of BROWSERQ_MAX_FILE_PARAM_BYTES.
DEFAULT_MAX_FILE_PARAM_BYTES = 25 * 1024 * 1024
#: What a file param's value (the reference in the run's params) holds: ``${cv.filename}``.
FILE_VALUE_KEYS = ("artifact", "filename", "size", "sha256", "content_type")
_FORMS = (
    "a file param takes a pathlib.Path (read by the producer), bytes, or "
    '{"filename": NAME, "content": bytes} / {"filename": NAME, "content_base64": TEXT}'
)


class FileValueError(ValueError):
    """A file param's value is unusable (the message names what to pass instead)."""


@dataclass(frozen=True)
class FileParam:
    """A file a producer passed: its bytes stay in the producer until stored with the run."""

    filename: str
    content: bytes = field(repr=False)  # never in a log line or a traceback
    content_type: str

    def artifact_name(self, param: str) -> str:
        """Its name inside the run's artifacts."""
        return f"inputs/{param}/{self.filename}"

    def reference(self, run_id: str, param: str) -> dict[str, Any]:
        """What the run's params hold instead of the bytes."""
        return {
            "artifact": f"{run_id}/{self.artifact_name(param)}",
            "filename": self.filename,
            "size": len(self.content),
            "sha256": hashlib.sha256(self.content).hexdigest(),
            "content_type": self.content_type,
        }


def _too_large(size: int, max_bytes: int) -> FileValueError:
    return FileValueError(
        f"the file is {size:,} bytes, over the limit of {max_bytes:,} (BROWSERQ_MAX_FILE_PARAM_BYTES)"
    )


def _read(path: Path, max_bytes: int) -> bytes:
    try:
        if not path.is_file():
            raise FileValueError(f"{str(path)!r} is not a file on the producer's host")
        size = path.stat().st_size
        if size > max_bytes:
            raise _too_large(size, max_bytes)
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise FileValueError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:  # it grew while being read
        raise _too_large(len(data), max_bytes)
    return data


def _content(value: Mapping[str, Any], max_bytes: int) -> bytes:
    unknown = sorted(set(map(str, value)) - {"filename", "content", "content_base64", "content_type"})
    if unknown:
        raise FileValueError(f"unknown keys {', '.join(unknown)}; {_FORMS}")
    if ("content" in value) == ("content_base64" in value):
        raise FileValueError(f"give exactly one of content and content_base64; {_FORMS}")
    if "content" in value:
        data = value["content"]
        if not isinstance(data, bytes | bytearray | memoryview):
            raise FileValueError(f"content must be bytes (or use content_base64 for text); {_FORMS}")
        data = bytes(data)
    else:
        text = value["content_base64"]
        if not isinstance(text, str):
            raise FileValueError("content_base64 must be a base64 string")
        if len(text) > (max_bytes // 3 + 1) * 4 + 4:
            raise _too_large(len(text) * 3 // 4, max_bytes)
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise FileValueError("content_base64 is not valid base64") from None
    if len(data) > max_bytes:
        raise _too_large(len(data), max_bytes)
    return data


def coerce_file(value: Any, param: str, max_bytes: int = DEFAULT_MAX_FILE_PARAM_BYTES) -> FileParam:
    """The file ``value`` passes for param ``param``; raises FileValueError."""
    content_type: Any = None
    if isinstance(value, str) and value.lstrip().startswith("{"):  # the mapping as JSON (-p cv=@cv.json)
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise FileValueError(f"looks like a JSON mapping but does not parse; {_FORMS}") from None
    if isinstance(value, Path):
        filename, data = value.name, _read(value, max_bytes)
    elif isinstance(value, bytes | bytearray | memoryview):
        filename, data = param, bytes(value)
        if len(data) > max_bytes:
            raise _too_large(len(data), max_bytes)
    elif isinstance(value, Mapping):
        given = value.get("filename")
        if not isinstance(given, str) or not given.strip():
            raise FileValueError(f"filename must be a non-empty string; {_FORMS}")
        filename = given
        data, content_type = _content(value, max_bytes), value.get("content_type")
        if content_type is not None and (not isinstance(content_type, str) or not content_type.isprintable()):
            raise FileValueError("content_type must be a printable string such as text/csv")
    else:
        shown = "a string (a path is only read as pathlib.Path)" if isinstance(value, str) else type(value).__name__
        raise FileValueError(f"got {shown}; {_FORMS}")
    name = safe_filename(filename, fallback=param)
    guessed = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return FileParam(name, data, str(content_type or guessed)[:200])


def file_param_names(declared: Mapping[str, Any]) -> set[str]:
    """The declared params of type ``file``."""
    return {name for name, spec in declared.items() if getattr(spec, "type", None) == "file"}


def upload_path_param_problems(template: Template, values: Mapping[str, Any]) -> list[str]:
    """Upload paths built from params (``file: {path: "${doc}"}``) that would leave the uploads
    directory, judged at the producer like literal ones at load. Paths that need outputs are
    judged by the worker."""
    problems: list[str] = []
    scope = make_scope(values)
    for step in template.iter_steps():
        if getattr(step, "action", None) != "upload":
            continue
        upload = cast("UploadStep", step)  # the action names the step's class (steps.Step)
        specs = [upload.file] if upload.file is not None else list(upload.files or [])
        for spec in specs:
            raw = spec if isinstance(spec, str) else spec.path
            if not isinstance(raw, str) or "${" not in raw:
                continue
            try:
                path = render(raw, scope)
            except StepFailed:
                continue  # refers to outputs: known only when the step runs
            problem = upload_path_problem(path) if isinstance(path, str) else None
            if problem:
                where = f"step {step.id}" if step.id else "an upload step"
                problems.append(f"{where}: {problem} (built from params)")
    return problems
