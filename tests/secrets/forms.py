"""Every form a secret takes on its way out, and a scanner that looks for each of them.

Written independently of :mod:`browserq.redact` on purpose: the tests check the redactor's result
against forms listed here by hand, not against the redactor's own idea of them.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import unicodedata
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, quote_plus

#: Characters the WHATWG application/x-www-form-urlencoded serializer leaves alone (what
#: Chromium posts for a form: ``~`` and ``!`` are encoded, unlike Python's ``quote_plus``).
_FORM_SAFE = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789*-._")
#: Characters Chromium percent-encodes in the query of a special URL (WHATWG query set + ').
_QUERY_ENCODED = set(b" \"#<>'")
#: Characters Chromium percent-encodes in a URL's userinfo (WHATWG userinfo percent-encode set).
_USERINFO_ENCODED = set(b" \"#<>?`{}/:;=@[\\]^|")


def _encode(text: str, keep: Callable[[int], bool], space: str | None = None) -> str:
    out = []
    for byte in text.encode():
        if space is not None and byte == 0x20:
            out.append(space)
        elif keep(byte):
            out.append(chr(byte))
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def chromium_form(text: str) -> str:
    return _encode(text, lambda b: b in _FORM_SAFE, space="+")


def chromium_query(text: str) -> str:
    return _encode(text, lambda b: 0x20 < b < 0x7F and b not in _QUERY_ENCODED)


def chromium_userinfo(text: str) -> str:
    return _encode(text, lambda b: 0x20 < b < 0x7F and b not in _USERINFO_ENCODED)


def _lower_hex(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), text)


def _html_safe_json(text: str) -> str:
    return json.dumps(text)[1:-1].replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _all_u_escapes(text: str) -> str:
    units = text.encode("utf-16-be")
    return "".join(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04x}" for i in range(0, len(units), 2))


def _b64_all(raw: bytes) -> set[str]:
    out = set()
    for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        out |= {encoded, encoded.rstrip("=")}
    return out


def secret_forms(secret: str, *, basic_user: str = "user", prefix_len: int = 8) -> dict[str, bytes]:
    """``{label: bytes}`` of every form the tests look for (secrets are never written in any)."""
    forms: dict[str, str] = {}
    for norm in ("NFC", "NFD"):
        s = unicodedata.normalize(norm, secret)
        tag = "" if norm == "NFC" else " (NFD)"
        candidates = {
            "clear": s,
            "quote": quote(s),
            "quote safe=''": quote(s, safe=""),
            "quote_plus": quote_plus(s),
            "quote_plus safe=''": quote_plus(s, safe=""),
            "chromium form post": chromium_form(s),
            "chromium query": chromium_query(s),
            "chromium userinfo": chromium_userinfo(s),
            "json": json.dumps(s)[1:-1],
            "json ensure_ascii=False": json.dumps(s, ensure_ascii=False)[1:-1],
            "json in json": json.dumps(json.dumps(s))[1:-1],
            "json html-safe": _html_safe_json(s),
            "json all \\u": _all_u_escapes(s),
            "html escape": html.escape(s),
            "html escape quote=False": html.escape(s, quote=False),
            f"first {prefix_len} characters": s[:prefix_len],
            f"first {prefix_len} characters, json": json.dumps(s[:prefix_len])[1:-1],
        }
        for label, value in list(candidates.items()):
            if "%" in value:
                candidates[label + " lower-case hex"] = _lower_hex(value)
        for label, raw in (("base64", s.encode()), (f"base64 {basic_user}:secret", f"{basic_user}:{s}".encode())):
            for i, encoded in enumerate(sorted(_b64_all(raw))):
                candidates[f"{label} #{i}"] = encoded
        forms.update({label + tag: value for label, value in candidates.items()})
    unique: dict[bytes, str] = {}
    for label, value in forms.items():
        unique.setdefault(value.encode(), label)
    return {label: value for value, label in unique.items()}


@dataclass(frozen=True)
class Leak:
    where: str
    form: str
    context: bytes

    def __str__(self) -> str:
        return f"{self.where}: {self.form}: …{self.context!r}…"


def expand(name: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    """``(name, data)``, and for a zip every member (its name too), recursively."""
    yield name, data
    if data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for info in archive.infolist():
                    member = f"{name}!{info.filename}"
                    yield f"{member} (name)", info.filename.encode()
                    yield from expand(member, archive.read(info))
        except zipfile.BadZipFile:
            pass


def files_under(root: Path) -> Iterator[tuple[str, bytes]]:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            yield f"{path} (name)", str(path.relative_to(root)).encode()
            yield from expand(str(path), path.read_bytes())


def find_leaks(blobs: Iterable[tuple[str, bytes]], forms: dict[str, bytes]) -> list[Leak]:
    leaks = []
    for where, data in blobs:
        for label, form in forms.items():
            at = data.find(form)
            if at >= 0:
                leaks.append(Leak(where, label, data[max(0, at - 60) : at + len(form) + 20]))
    return leaks


def keystrokes(trace_member: bytes) -> str:
    """The text of every keyboard action of a Playwright ``.trace`` member, joined in order."""
    typed = []
    for line in trace_member.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") != "before":
            continue
        method = str(event.get("method", ""))
        if method.lower().startswith(("keyboard", "press", "type", "insert")):
            params = event.get("params") or {}
            typed.append(str(params.get("text") or params.get("key") or ""))
    return "".join(typed)
