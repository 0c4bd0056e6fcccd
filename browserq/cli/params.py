"""``-p key=value`` parameters and the command line's own text, as the CLI reads them.

Values stay strings here; the template's param types coerce them. ``@path`` and ``@-`` keep a
value (a password) out of the process list, which ``ps`` shows to every user of the machine.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from browserq.cli.render import fail


def parse_params(pairs: list[str], stdin: Any = None) -> dict[str, Any]:
    """``-p key=value`` pairs; values stay strings and are coerced by the template's param types.

    A value can stay out of the process list (``ps`` shows every argument): ``key=@path`` reads
    it from a file, ``key=@-`` from standard input (once; one trailing newline is dropped in both
    cases). ``key=@@text`` is the literal value ``@text``.
    """
    params: dict[str, Any] = {}
    read_stdin = False
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            fail(f"-p expects key=value, got {pair!r}")
        if value == "@-":
            if read_stdin:
                fail(f"-p {key}=@-: standard input was already read for another parameter")
            read_stdin = True
        params[key] = _param_value(key, value, stdin or sys.stdin)
    return params


def _param_value(key: str, value: str, stdin: Any) -> str:
    """``value`` itself, or what ``@path`` / ``@-`` point to (one trailing newline dropped)."""
    if not value.startswith("@"):
        return value
    if value.startswith("@@"):
        return value[1:]
    source = value[1:]
    if source == "-":
        text = stdin.read()
    else:
        try:
            text = Path(source).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(
                f"-p {key}=@{source}: cannot read the value from file {source!r} "
                f"({exc.__class__.__name__}: {exc}); write @@… for a literal value starting with @"
            )
            raise AssertionError("unreachable") from exc
    return text.removesuffix("\n")


def undecodable_argument(argv: list[str]) -> str | None:
    """The first argument that is not valid UTF-8 (Python keeps such bytes as lone surrogates,
    which every later layer — the database, the terminal — would choke on)."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return None
