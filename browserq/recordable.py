"""Values any database accepts: the one place where whatever a page returned becomes storable.

A page decides what a step returns: a title with U+0000 (PostgreSQL rejects it in text and JSON),
a lone surrogate (no UTF-8 encoder accepts it), ``NaN`` (not JSON), an integer of 5,000 digits
(Python refuses to print it), a circular object, a list nested 5,000 deep. Every JSON column and
every text parameter passes through here on its way to the database (see
``browserq.store.engine``), and the runner uses the strict form to give the step a clear error.

Rules (the same as the page-side conversion in :mod:`browserq.actions.outputs`):

* NUL and lone surrogates in any string (keys too) become U+FFFD;
* ``NaN`` and ``±Infinity`` become ``null`` (what ``JSON.stringify`` does);
* integers too long to print in decimal become their decimal digits as a string;
* dates and times become ISO 8601 strings; sets and tuples lists; bytes text; anything else ``str()``;
* a circular reference or nesting deeper than :data:`MAX_DEPTH`: :class:`NotRecordable` when
  ``strict``, else the markers ``"[circular]"`` / ``"[nested too deep]"`` (the store never fails).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
import re
from collections.abc import Mapping
from typing import Any

#: Deepest nesting of lists/objects a step output may have.
MAX_DEPTH = 100
REPLACEMENT = "\ufffd"
#: Python prints at most this many decimal digits of an int (``sys.get_int_max_str_digits``).
_INT_DIGITS_LIMIT = 4000
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class NotRecordable(ValueError):
    """A value has no JSON form (a circular reference, or nesting deeper than MAX_DEPTH)."""

    def __init__(self, problem: str, where: str) -> None:
        self.problem, self.where = problem, where
        super().__init__(f"{problem} at {where}")


def clean_text(text: str) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD (a no-op for ordinary text)."""
    if text.isascii():
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    if "\x00" not in text:
        try:
            text.encode("utf-8")
            return text  # no lone surrogate either
        except UnicodeEncodeError:
            pass
    # Valid surrogate pairs cannot occur in a Python str (they would be one code point).
    return _UNSTORABLE.sub(REPLACEMENT, text)


def recordable(value: Any, *, strict: bool = False) -> Any:
    """A JSON-safe copy of ``value`` following the module's rules (``value`` itself is not changed)."""
    return _convert(value, 0, "$", set(), strict)


def dumps(value: Any) -> str:
    """JSON text of ``value`` that every database stores; never raises.

    Fast path: plain JSON data is dumped once by the C encoder; only a value that fails there
    (or holds NUL/surrogates) is walked and converted.
    """
    return _dumps(value)[0]


def sized(value: Any) -> tuple[Any, int]:
    """``value`` made recordable (not strict) and the UTF-8 bytes of its JSON text; plain data
    comes back as is, after one pass of the C encoder."""
    text, converted = _dumps(value)
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    return (recordable(value) if converted else value), size


def json_size(value: Any) -> int:
    """UTF-8 bytes of ``value``'s JSON text (``value`` must already be recordable)."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _dumps(value: Any) -> tuple[str, bool]:
    """(JSON text, whether ``value`` had to be converted to get it)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return json.dumps(recordable(value), ensure_ascii=False, allow_nan=False), True
    if "\\u0000" in text or not utf8_encodable(text):
        return json.dumps(recordable(value), ensure_ascii=False, allow_nan=False), True
    return text, False


def utf8_encodable(text: str) -> bool:
    """False for text holding lone surrogates (no database or UTF-8 file can take it)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _convert(value: Any, depth: int, where: str, path: set[int], strict: bool) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, int):
        if value.bit_length() > _INT_DIGITS_LIMIT * 3:  # ~ 900+ digits: check exactly
            digits = str(decimal.Decimal(value))
            return digits if len(digits) > _INT_DIGITS_LIMIT else int(value)
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return clean_text(bytes(value).decode("utf-8", "replace"))
    if isinstance(value, decimal.Decimal):
        return float(value) if value.is_finite() and abs(value.adjusted()) < 300 else None
    if not isinstance(value, Mapping | list | tuple | set | frozenset):
        return clean_text(str(value))
    if depth >= MAX_DEPTH:
        if strict:
            raise NotRecordable(f"nested deeper than {MAX_DEPTH} levels", where)
        return "[nested too deep]"
    if id(value) in path:
        if strict:
            raise NotRecordable("circular reference", where)
        return "[circular]"
    path.add(id(value))
    try:
        if isinstance(value, Mapping):
            converted = {}
            for key, item in value.items():
                name = clean_text(key) if isinstance(key, str) else str(_convert(key, depth, where, path, strict))
                converted[name] = _convert(item, depth + 1, f"{where}.{name}", path, strict)
            return converted
        return [_convert(item, depth + 1, f"{where}[{i}]", path, strict) for i, item in enumerate(value)]
    finally:
        path.discard(id(value))
