"""Reading the lines of Playwright's ``aria_snapshot(mode="ai")``, so their refs can be rewritten.

Playwright renders each node as one YAML line: ``- role "name" [attr] [ref=e12]: text``, the
whole key single-quoted when YAML needs it (``- 'button "No: yes" [ref=e3]'``). A page chooses
the names, so a name may itself hold ``[ref=e1]``: the ref is read only from the attributes
*after* the name (parsed as the JSON string Playwright wrote), never by searching the line.
A line that does not parse keeps no ref: it is shown as it is, and nothing can act through it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

_INDENT = re.compile(r"^( *)- ")
_ROLE = re.compile(r"[A-Za-z][\w-]*")
_ATTRIBUTE = re.compile(r" \[([^\]\[]*)\]")
#: The end of an unquoted key: YAML's ``: `` (or a colon ending the line).
_KEY_END = re.compile(r":(?: |$)")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class AriaLine:
    """One line of a snapshot: its depth, and for a node its role, name, attributes and ref."""

    raw: str
    depth: int
    role: str | None = None  # None: a text line, a property (``- /url: …``) or one that did not parse
    name: str = ""
    attributes: tuple[str, ...] = ()  # ``level=1``, ``checked``, ``ref=e12``, ``cursor=pointer``…
    ref: str | None = None  # Playwright's ref (``e12``, ``f1e3``)
    rest: str = ""  # what follows the key: ``""``, ``":"`` or ``": text"``
    quoted: bool = False  # the key was single-quoted

    @property
    def is_property(self) -> bool:
        """``- /url: …``, ``- /placeholder: …``: a property of the node above."""
        return self.raw.lstrip().startswith("- /")

    def with_ref(self, ref: str | None) -> AriaLine:
        """The same node shown with another ref (None: without one)."""
        return replace(self, ref=ref)

    def render(self, depth: int | None = None) -> str:
        """The line as text, at ``depth`` (default: its own); the ref as it is now."""
        if self.role is None:
            return self.raw if depth is None else "  " * depth + self.raw.lstrip(" ")
        key = self.role
        if self.name:
            key += " " + json.dumps(self.name, ensure_ascii=False)
        shown = [f"ref={self.ref}" if a.startswith("ref=") else a for a in self.attributes
                 if self.ref is not None or not a.startswith("ref=")]
        if self.ref is not None and not any(a.startswith("ref=") for a in self.attributes):
            shown.append(f"ref={self.ref}")
        key += "".join(f" [{attribute}]" for attribute in shown)
        if self.quoted:
            key = "'" + key.replace("'", "''") + "'"
        return "  " * (self.depth if depth is None else depth) + "- " + key + self.rest


def parse_line(raw: str) -> AriaLine:
    """One snapshot line, read; a line in an unexpected shape keeps its text and no ref."""
    match = _INDENT.match(raw)
    if match is None:
        return AriaLine(raw, 0)
    depth = len(match.group(1)) // 2
    body = raw[match.end():]
    split = _split_key(body)
    if split is None:
        return AriaLine(raw, depth)
    key, rest, quoted = split
    node = _parse_key(key)
    if node is None:
        return AriaLine(raw, depth)
    role, name, attributes = node
    refs = [a for a in attributes if a.startswith("ref=")]
    if len(refs) > 1:
        return AriaLine(raw, depth)
    ref = refs[0][len("ref="):] if refs else None
    return AriaLine(raw, depth, role, name, attributes, ref, rest, quoted)


def parse_lines(text: str) -> list[AriaLine]:
    """Every line of a snapshot, read."""
    return [parse_line(raw) for raw in text.splitlines() if raw.strip()]


def _split_key(body: str) -> tuple[str, str, bool] | None:
    """``(key, rest, quoted)``: the key unquoted, and what follows it."""
    if body.startswith("'"):
        position, key = 1, []
        while position < len(body):
            char = body[position]
            if char == "'":
                if body.startswith("''", position):
                    key.append("'")
                    position += 2
                    continue
                return "".join(key), body[position + 1:], True
            key.append(char)
            position += 1
        return None
    end = _KEY_END.search(body)
    if end is None:
        return body, "", False
    return body[:end.start()], body[end.start():], False


def _parse_key(key: str) -> tuple[str, str, tuple[str, ...]] | None:
    """``role "name" [a] [b=c]`` → ``(role, name, (a, b=c))``; None if it is no node's key."""
    role = _ROLE.match(key)
    if role is None:
        return None
    position, name = role.end(), ""
    if key.startswith(' "', position):
        try:
            value, end = _DECODER.raw_decode(key, position + 1)
        except json.JSONDecodeError:
            return None
        if not isinstance(value, str):
            return None
        name, position = value, end
    attributes = []
    while position < len(key):
        attribute = _ATTRIBUTE.match(key, position)
        if attribute is None:
            return None
        attributes.append(attribute.group(1))
        position = attribute.end()
    return role.group(0), name, tuple(attributes)
