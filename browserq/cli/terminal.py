"""Page text made inert before it reaches a terminal.

Accessible names, error messages, dialog texts, extracted outputs and URLs come from pages, and
a page may put control characters in them: ``ESC ] 0 ;`` sets the terminal's title, ``ESC [ 2 J``
clears the screen, ``ESC ] 8 ;;`` plants a hyperlink, a C1 ``CSI`` (U+009B) does the same in one
character, and bidirectional overrides (U+202E) make text read other than it is. Every control
character is replaced by a visible stand-in of the same width, at the three places the CLI
writes: a render hook on its Rich consoles (every ``print``, table and title, whatever its
source, by its text segments: the styles Rich adds are not text and stay), :func:`inert` for
plain tab-separated lines, and :func:`json_text` for ``--json``, which escapes them as JSON.

Rich markup is off on both consoles, so ``[link=…]`` in page text is printed as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderableType, RenderHook
from rich.segment import Segment
from rich.table import Table
from rich.text import Text, TextType

#: Bidirectional embeddings, overrides and isolates, which make text read other than it is
#: stored ("Trojan Source"); not the marks (LRM, RLM) real pages use, nor emoji joiners.
_FORMAT = "\u202a-\u202e\u2066-\u2069"
#: C0 (but tab and newline), DEL, C1, bidi controls, line and paragraph separators.
CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_FORMAT}]")
#: The same, inside JSON text (where ``json.dumps`` has escaped C0 already).
_JSON_CONTROL = re.compile(f"[\x7f-\x9f\u2028\u2029{_FORMAT}]")
#: What stands in for a character of CONTROL.
REPLACEMENT = "\ufffd"


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␇ for BEL: Unicode's control pictures
    return "\u2421" if code == 0x7F else REPLACEMENT


def inert(text: str) -> str:
    """``text`` with every control character replaced by a visible one of the same width."""
    return CONTROL.sub(_stand_in, text)


def json_text(data: Any, **dumps: Any) -> str:
    """``json.dumps`` for a terminal: the same data, with C1 and bidi controls escaped too
    (``json.dumps`` leaves them raw when ``ensure_ascii`` is off)."""
    text = json.dumps(data, ensure_ascii=False, **dumps)
    return _JSON_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _inert_in_place(renderable: RenderableType) -> RenderableType:
    """``renderable`` made inert before Rich lays it out (a stand-in is as wide as Rich thinks
    the control character is not, so this is done to the text, not to the printed lines): a
    ``Text``, or a ``Table``'s title, caption and cells."""
    if isinstance(renderable, str):
        return inert(renderable)
    if isinstance(renderable, Text):
        return _inert_text(renderable)
    if isinstance(renderable, Table):
        renderable.title = _inert_label(renderable.title)
        renderable.caption = _inert_label(renderable.caption)
        for column in renderable.columns:
            column._cells = [_inert_in_place(cell) for cell in column._cells]
    return renderable


def _inert_text(text: Text) -> Text:
    """``text`` made inert in place (one character for one, so its spans still fit)."""
    if CONTROL.search(text.plain):
        text.plain = inert(text.plain)
    return text


def _inert_label(label: TextType | None) -> TextType | None:
    """A table's title or caption made inert."""
    if isinstance(label, str):
        return inert(label)
    return _inert_text(label) if label is not None else None


class _Inert:
    """A renderable printed with its text made :func:`inert`: before layout where its kind is
    known, and line by line for any other (control segments pass: they are Rich's own cursor
    moves, not text)."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = _inert_in_place(renderable)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for segment in console.render(self.renderable, options):
            if segment.control or not CONTROL.search(segment.text):
                yield segment
            else:
                yield Segment(inert(segment.text), segment.style)


class InertHook(RenderHook):
    """The render hook that makes everything a console prints :func:`inert`."""

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Inert(r) for r in renderables]


def inert_console(**options: Any) -> Console:
    """A Rich console (markup and emoji codes off) whose output holds no control character
    from the text it prints."""
    console = Console(markup=False, emoji=False, **options)
    console.push_render_hook(InertHook())
    return console


__all__ = ["CONTROL", "InertHook", "inert", "inert_console", "json_text"]
