"""Keeping secret parameter values out of everything browserq writes.

A :class:`Redactor` knows the secret values of one run and scrubs them from step inputs, outputs,
error messages, logs, checkpoints, DOM snapshots, console and network captures, and from every
member of a Playwright trace zip (traces record ``fill()`` values and DOM snapshots in clear,
microsoft/playwright#19992) — the members' content-hash *names* included.

A secret rarely travels as typed. One pattern per secret matches it in every encoding a browser,
a server or a serializer gives it, character by character and mixed freely:

* clear text (NFC and NFD forms of accented letters);
* percent-encoding, upper- or lower-case hex, ``+`` for a space, whatever a caller left unencoded
  (``quote`` with or without safe characters, ``quote_plus``, and Chromium's form encoding, which
  also encodes ``~`` and ``!``), double percent-encoding (``%2526``);
* JSON and JavaScript escapes (``\\"``, ``\\/``, ``\\u00e9``, ``\\x26``, surrogate pairs),
  including escapes of escapes (JSON inside JSON);
* HTML character references (``&amp;``, ``&#38;``, ``&#x26;``, ``&eacute;``);
* base64, standard and URL-safe, with or without padding, of the value *and of the value inside a
  larger string* such as ``user:value`` (HTTP Basic auth): the characters of the encoding that
  depend only on the secret's bytes are matched for each of the three alignments.

Secrets shorter than :data:`MIN_SCRUB_LENGTH` are masked only where a whole value equals them.

While a run executes, its redactor is registered with :func:`active`, and :func:`scrub_active`
(used by the log processors in :mod:`browserq.logs`) scrubs every log line of the process with
every active redactor — including lines written by Celery and by tracebacks.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tempfile
import threading
import unicodedata
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from html.entities import codepoint2name
from pathlib import Path
from typing import Any

#: Secrets shorter than this are masked only where a whole value equals them: scrubbing "ab" out
#: of every page would destroy the captures without protecting anything.
MIN_SCRUB_LENGTH = 4
#: A base64 fragment shorter than this is not matched on its own (too many false positives).
MIN_BASE64_FRAGMENT = 5
#: Names of trace members Playwright derives from their content (``resources/<sha1>.<ext>``).
_CONTENT_NAME = re.compile(r"^(?P<dir>(?:.*/)?)(?P<sha1>[0-9a-f]{40})(?P<ext>(?:\.[A-Za-z0-9]+)?)$")


def mask(name: str) -> str:
    return f"[secret:{name}]"


class Redactor:
    def __init__(self, secrets: Mapping[str, Any] | None = None) -> None:
        self._values = [(name, str(v)) for name, v in (secrets or {}).items() if v is not None and v != ""]
        self._build()

    def add(self, name: str, value: str) -> None:
        """Mask ``value`` too, as ``[secret:NAME]``, from now on: a value the run learns while it
        runs (what a person typed in a handoff). Several values may share a name."""
        if value and (name, value) not in self._values:
            self._values.append((name, value))
            self._build()

    def _build(self) -> None:
        """Compile every value's patterns; the new tables replace the old ones only once built
        (another thread may be scrubbing a log line with them meanwhile)."""
        exact: dict[str, str] = {}
        patterns: list[tuple[re.Pattern[str], str]] = []
        byte_patterns: list[tuple[re.Pattern[bytes], bytes]] = []
        # Base64 is matched as plain substrings (bytes.replace is far faster than a regex branch).
        literals: list[tuple[str, str]] = []
        # Longest first, so a secret that contains another is masked whole.
        for name, text in sorted(self._values, key=lambda item: len(item[1]), reverse=True):
            exact[text] = mask(name)
            if len(text) >= MIN_SCRUB_LENGTH:
                patterns.append((re.compile(secret_pattern(text)), mask(name)))
                byte_patterns.append((re.compile(secret_pattern(text, as_bytes=True).encode()), mask(name).encode()))
                literals += [(fragment, mask(name)) for fragment in _base64_fragments(text)]
        literals.sort(key=lambda pair: len(pair[0]), reverse=True)
        self._byte_literals = [(f.encode(), m.encode()) for f, m in literals]
        self._literals, self._byte_patterns, self._patterns, self._exact = literals, byte_patterns, patterns, exact

    def __bool__(self) -> bool:
        return bool(self._exact)

    def text(self, value: str) -> str:
        if value in self._exact:
            return self._exact[value]
        for pattern, replacement in self._patterns:
            value = pattern.sub(replacement, value)
        for fragment, replacement in self._literals:
            if fragment in value:
                value = value.replace(fragment, replacement)
        return value

    def contains(self, value: str) -> bool:
        """Whether ``value`` holds a secret in any form this redactor scrubs."""
        return (
            value in self._exact
            or any(p.search(value) for p, _ in self._patterns)
            or any(f in value for f, _ in self._literals)
        )

    def data(self, value: Any) -> Any:
        """Scrub every string inside a JSON-like structure (dict keys included)."""
        if not self:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value

    def bytes(self, value: bytes) -> bytes:
        for pattern, replacement in self._byte_patterns:
            value = pattern.sub(replacement, value)
        for fragment, replacement in self._byte_literals:
            if fragment in value:
                value = value.replace(fragment, replacement)
        return value

    def zip_file(self, path: Path) -> None:
        """Rewrite a zip (a Playwright trace) with every member scrubbed.

        A member named after the SHA-1 of its content (``resources/<sha1>.html``) whose content
        changed is renamed after the SHA-1 of the scrubbed content, and every reference to the old
        name in the other members is rewritten: the trace still opens, and the old name — the hash
        of content holding the secret — cannot be used to check a guess offline.
        """
        if not self._byte_patterns:
            return
        with zipfile.ZipFile(path) as src:
            members = [(info, src.read(info)) for info in src.infolist()]
        scrubbed: list[tuple[zipfile.ZipInfo, bytes]] = []
        renames: dict[bytes, bytes] = {}
        for info, data in members:
            clean = self.bytes(data)
            match = _CONTENT_NAME.match(info.filename)
            if clean != data and match:
                new_sha1 = hashlib.sha1(clean).hexdigest()
                renames[match["sha1"].encode()] = new_sha1.encode()
                info = _renamed(info, f"{match['dir']}{new_sha1}{match['ext']}")
            scrubbed.append((info, clean))
        _write_zip(path, [(info, _replace_all(data, renames)) for info, data in scrubbed])


def secret_pattern(text: str, *, as_bytes: bool = False) -> str:
    """A regular expression matching ``text`` in every form listed in the module docstring but
    base64 (:func:`_base64_fragments`, matched as substrings).

    ``as_bytes``: the pattern is meant for UTF-8 bytes (encode it before compiling).
    """
    alternatives: list[str] = []
    for variant in _unicode_variants(text):
        tail = _char_sequence(variant[1:], as_bytes)
        alternatives += [first + tail for first in _char_forms(variant[0], as_bytes)]
    # A top-level alternation whose every branch starts with a literal character: the regex engine
    # then jumps between positions holding one of those characters instead of trying every
    # branch at every byte (about 50x faster on a trace).
    return "|".join(alternatives)


def _unicode_variants(text: str) -> list[str]:
    return list(dict.fromkeys(unicodedata.normalize(form, text) for form in ("NFC", "NFD")))


def _char_sequence(text: str, as_bytes: bool) -> str:
    return "".join("(?:" + "|".join(_char_forms(c, as_bytes)) + ")" for c in text)


def _char_forms(c: str, as_bytes: bool) -> list[str]:
    """Regex fragments, each matching one encoding of the single character ``c``."""
    cp = ord(c)
    literal = "".join(f"\\x{b:02x}" for b in c.encode()) if as_bytes and cp > 0x7F else re.escape(c)
    forms = [literal]
    # Percent-encoding of the UTF-8 bytes (any hex case; %25 prefixes: encoded more than once).
    forms.append("".join(f"%(?:25)*(?i:{b:02x})" for b in c.encode()))
    if c == " ":
        forms.append(r"\+")
    # JSON / JavaScript escapes, behind any number of backslashes (escapes of escapes).
    escape = r"\\" + r"\\*"  # one backslash or more, starting with a literal one
    if cp <= 0xFFFF:
        forms.append(f"{escape}u(?i:{cp:04x})")
    else:
        high, low = divmod(cp - 0x10000, 0x400)
        forms.append(f"{escape}u(?i:{0xD800 + high:04x}){escape}u(?i:{0xDC00 + low:04x})")
    if cp < 0x100:
        forms.append(f"{escape}x(?i:{cp:02x})")
    if c in "\"\\/'":
        forms.append(escape + re.escape(c))
    short = {"\n": "n", "\t": "t", "\r": "r", "\b": "b", "\f": "f"}.get(c)
    if short:
        forms.append(escape + short)
    # HTML character references.
    forms.append(f"&#0*{cp};")
    forms.append(f"&#[xX]0*(?i:{cp:x});")
    if cp in codepoint2name:
        forms.append(f"&{codepoint2name[cp]};")
    if c == "'":
        forms.append("&apos;")
    return forms


def _base64_fragments(text: str) -> set[str]:
    """Base64 text of ``text`` on its own and as part of any longer string.

    Inside ``base64(prefix + text + suffix)`` only the characters whose 6 bits all come from
    ``text`` are fixed; which ones depends on ``len(prefix) % 3``. For each of the three
    alignments, those characters form one fragment that appears whatever surrounds the secret.
    """
    found: set[str] = set()
    for variant in _unicode_variants(text):
        raw = variant.encode()
        whole = base64.b64encode(raw).decode()
        found.update({whole, whole.rstrip("=")})
        for offset in range(3):
            encoded = base64.b64encode(b"\0" * offset + raw + b"\0\0").decode()
            start = -(-8 * offset // 6)  # ceil: the first character with no prefix bit in it
            end = (8 * (offset + len(raw))) // 6  # the first character with a suffix bit in it
            fragment = encoded[start:end]
            if len(fragment) >= MIN_BASE64_FRAGMENT:
                found.add(fragment)
    found |= {f.replace("+", "-").replace("/", "_") for f in found}
    return {f for f in found if len(f) >= MIN_BASE64_FRAGMENT}


def _renamed(info: zipfile.ZipInfo, name: str) -> zipfile.ZipInfo:
    renamed = zipfile.ZipInfo(name, date_time=info.date_time)
    renamed.compress_type = info.compress_type
    renamed.external_attr = info.external_attr
    return renamed


def _replace_all(data: bytes, renames: Mapping[bytes, bytes]) -> bytes:
    for old, new in renames.items():
        if old in data:
            data = data.replace(old, new)
    return data


def _write_zip(path: Path, members: Iterable[tuple[zipfile.ZipInfo, bytes]]) -> None:
    """Write ``members`` to ``path`` atomically (a temp file in the same directory, then rename)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".zip.tmp")
    os.close(fd)
    try:
        written: set[str] = set()
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
            for info, data in members:
                if info.filename in written:  # two resources that scrub to the same content
                    continue
                written.add(info.filename)
                info.compress_type = zipfile.ZIP_DEFLATED
                dst.writestr(info, data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# --- the redactors of the runs executing in this process (for logs) -----------------------------
_active: list[Redactor] = []
_active_lock = threading.Lock()


@contextmanager
def active(redactor: Redactor) -> Iterator[None]:
    """Register ``redactor`` for the duration of a run: every log line of the process is scrubbed
    with it (a Celery or Playwright message, a traceback, not only browserq's own records)."""
    if not redactor:
        yield
        return
    with _active_lock:
        _active.append(redactor)
    try:
        yield
    finally:
        with _active_lock:
            _active.remove(redactor)


def scrub_active(text: str) -> str:
    """``text`` scrubbed with the redactor of every run executing in this process."""
    return scrub_active_data(text)


def scrub_active_data(value: Any) -> Any:
    """Every string in ``value`` scrubbed with the redactor of every run executing here."""
    with _active_lock:
        redactors = list(_active)
    for redactor in redactors:
        value = redactor.data(value)
    return value


def _leading(pattern: str, text: str) -> str:
    """The start of ``text`` that ``pattern`` matches ("" if it matches none)."""
    found = re.match(pattern, text)
    return found.group(0) if found else ""


def redact_url(text: str) -> str:
    """``text`` with whatever could be a password replaced by ``***`` — also on malformed input.

    ``scheme://user:pw@host`` keeps the user; an entry without a scheme may be the tail of a
    password that contained an unencoded ``,`` so all of it before ``@`` (or all of it) is masked;
    a non-numeric "port" (``http://user:pw`` with the ``@host`` part cut off) is masked too.
    """
    scheme, sep, rest = text.partition("://")
    if not sep:
        return "***@" + text.rpartition("@")[2] if "@" in text else ("***" if text else "")
    if "@" in rest:
        creds, _, hostpart = rest.rpartition("@")
        user, colon, _password = creds.partition(":")
        return f"{scheme}://{user}{':***' if colon else ''}@{hostpart}"
    if rest.startswith("["):
        host = rest[: rest.find("]") + 1] or rest
    else:
        host = _leading(r"[^:/?#]*", rest)
    after = rest[len(host) :]
    if after.startswith(":"):
        digits = _leading(r":\d*", after)
        tail = after[len(digits) :]
        if tail and tail[0] not in "/?#":
            return f"{scheme}://{host}:***"
    return text
