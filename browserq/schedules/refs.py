"""Param references: ``{env: VAR}`` and ``{file: /path}`` become values when an entry fires.

Resolved at every fire, not once: a rotated secret file or a changed variable is used from the
next slot on, and no secret sits in the schedule objects beat keeps. What a reference resolves
to is never printed: errors name the param and the reference only, and a problem the producer
finds with a referenced value is reworded by :func:`conceal` before anyone sees it.

A ``{file: …}`` reference reads a regular file of at most :data:`MAX_REFERENCE_BYTES`: a FIFO
would block beat (and ``schedules validate``, and ``doctor``) forever, ``/dev/zero`` would fill
its memory, and ``/proc`` or ``/sys`` pseudo-files are not where a secret is kept.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from browserq.errors import ConfigError, ParamError
from browserq.schedules.model import EnvRef, FileRef, Reference, Schedule

#: The most a referenced value may hold (a password, a token, a URL: far less).
MAX_REFERENCE_BYTES = 64 * 1024
#: Pseudo filesystems a reference may not read (kernel state, devices), by their mount point.
PSEUDO_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))
#: What a problem about a referenced value says instead of the value.
NOT_SHOWN = "the value is not shown: a referenced value may be a secret"


def reference_text(reference: Reference) -> str:
    """The reference as the file spells it (never its value)."""
    return (
        f"{{env: {reference.env}}}"
        if isinstance(reference, EnvRef)
        else f"{{file: {reference.file}}}"
    )


def resolve_reference(reference: Reference) -> str:
    """The text a reference points to; raises ValueError saying what is missing."""
    if isinstance(reference, EnvRef):
        value = os.environ.get(reference.env)
        if value is None:
            raise ValueError(f"environment variable {reference.env} is not set")
        if not value:
            raise ValueError(f"environment variable {reference.env} is empty")
        if len(value.encode("utf-8", "surrogateescape")) > MAX_REFERENCE_BYTES:
            raise ValueError(
                f"environment variable {reference.env} holds more than {_limit()}, "
                "the limit of a referenced value"
            )
        return value
    assert isinstance(reference, FileRef)
    value = _read_file(reference.file).rstrip("\r\n")
    if not value:
        raise ValueError(f"file {reference.file} is empty")
    return value


def _read_file(path: Path) -> str:
    """A regular file's text, read no further than the limit (never blocks on a FIFO)."""
    real = Path(os.path.realpath(path))
    if any(real == root or root in real.parents for root in PSEUDO_ROOTS):
        raise ValueError(
            f"file {path} is under {next(r for r in PSEUDO_ROOTS if r == real or r in real.parents)}, "
            "not a regular file; a reference reads a regular file (e.g. a mounted secret)"
        )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise ValueError(f"file {path} does not exist") from None
    except OSError as exc:
        raise ValueError(f"file {path} cannot be read: {type(exc).__name__}") from None
    try:
        data = _read_regular(fd, path)
    finally:
        os.close(fd)
    if len(data) > MAX_REFERENCE_BYTES:
        raise ValueError(f"file {path} is larger than {_limit()}, the limit of a referenced value")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"file {path} cannot be read: it is not UTF-8 text") from None


def _read_regular(fd: int, path: Path) -> bytes:
    """Up to one byte past the limit from ``fd``, once it is a regular file within the limit."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(
            f"file {path} is not a regular file (a directory, FIFO, socket or device); "
            "a reference reads a regular file (e.g. a mounted secret)"
        )
    if info.st_size > MAX_REFERENCE_BYTES:
        raise ValueError(f"file {path} is larger than {_limit()}, the limit of a referenced value")
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_REFERENCE_BYTES:
        try:
            chunk = os.read(fd, MAX_REFERENCE_BYTES + 1 - size)
        except OSError as exc:
            raise ValueError(f"file {path} cannot be read: {type(exc).__name__}") from None
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _limit() -> str:
    return f"{MAX_REFERENCE_BYTES // 1024} KiB"


def resolve_params(schedule: Schedule) -> tuple[dict[str, Any], list[str]]:
    """``schedule``'s params with every reference replaced by its value, and one line per
    reference that does not resolve (left out of the params)."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in schedule.params.items():
        if not isinstance(value, EnvRef | FileRef):
            values[name] = value
            continue
        try:
            values[name] = resolve_reference(value)
        except ValueError as exc:
            problems.append(f"param {name!r}: {exc}")
    return values, problems


def resolved_params(schedule: Schedule) -> dict[str, Any]:
    """The params to submit; ConfigError if a reference stopped resolving since beat checked it."""
    values, problems = resolve_params(schedule)
    if problems:
        raise ConfigError(f"schedule {schedule.name!r}: " + "; ".join(problems))
    return values


def conceal(schedule: Schedule, values: dict[str, Any], problems: list[str]) -> list[str]:
    """``problems`` (the producer's, about ``values``) with no referenced value in them.

    The producer quotes a bad value, or a piece of it (a URL's scheme, a host), to help its
    caller; for a referenced one that caller is a log or a terminal, and the value may be a
    secret (a ``/etc/shadow`` line, a webhook secret). A problem about a referenced param says
    only which param and reference it is about; any other line that holds a piece of a
    referenced value (a pattern built from it) likewise.
    """
    referenced = {
        name: (ref, str(values[name]))
        for name, ref in schedule.references.items()
        if name in values
    }
    concealed = []
    for line in problems:
        for name, (ref, value) in referenced.items():
            if line.startswith(f"param {name!r}: "):
                line = f"param {name!r}: the value of {reference_text(ref)} does not pass the template's check; {NOT_SHOWN}"
                break
            line = _replace_quoted(line, value, f"<the value of {reference_text(ref)}>")
            if _holds(line, value):
                line = (
                    f"a value built from param {name!r}, the value of {reference_text(ref)}, does not pass "
                    f"the template's check; {NOT_SHOWN}"
                )
        concealed.append(line)
    return concealed


#: A piece of a value this long found in a message counts as the value showing.
PIECE = 4


def _holds(line: str, value: str) -> bool:
    """Whether ``line`` shows ``value``, whole, escaped, or any :data:`PIECE` characters of it."""
    forms = {value, repr(value)[1:-1]}
    if any(form and form in line for form in forms):
        return True
    return any(
        line[i : i + PIECE] in form
        for form in forms
        if len(form) >= PIECE
        for i in range(len(line) - PIECE + 1)
    )


def _replace_quoted(line: str, value: str, stand_in: str) -> str:
    from browserq.templates.params import show

    for form in sorted({repr(value), show(value)}, key=len, reverse=True):
        line = line.replace(form, stand_in)
    return line


def concealed_error(schedule: Schedule, values: dict[str, Any], exc: ParamError) -> ParamError:
    """``exc`` with :func:`conceal`'s problems (the same template, the same lines otherwise)."""
    return ParamError(exc.template, conceal(schedule, values, exc.problems))


__all__ = [
    "MAX_REFERENCE_BYTES",
    "conceal",
    "concealed_error",
    "reference_text",
    "resolve_params",
    "resolve_reference",
    "resolved_params",
]
