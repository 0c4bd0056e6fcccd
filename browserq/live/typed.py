"""What a person types through the live view: never recorded, learned only to be scrubbed.

A person's input is one step attempt each, and the live view sends each key as it is pressed,
so recording the characters would spell a one-time code or a password out one attempt at a time
(no masking of whole values can catch that). A ``text`` input is recorded as ``{"length": N}``,
a key by its name (Enter, Tab) unless a password field has focus — in any frame, cross-origin
ones included, and inside open shadow roots (:func:`password_focused`).

The page still holds what was typed, and evidence recorded after the wait may show it: a trace's
DOM snapshots keep every field's value, a network capture a form's body. So at the end of a wait
the runner learns the values a person put in (:func:`learn`): the runs of text they typed (from
the first character to a key or click that moves on) and the values of the page's fields that
changed during the wait (in every frame and open shadow root). Those are scrubbed from the run's
trace as ``[secret:typed]``; one typed in a password field is masked everywhere, as a secret param.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import structlog

from browserq.redact import Redactor

log = structlog.get_logger(__name__)

#: The mask of what a person typed: ``[secret:typed]``.
TYPED = "typed"
#: At most this many values are learned from one wait, each at most this long (a long text area
#: is cut: its start is masked).
MAX_VALUES = 50
MAX_VALUE_CHARS = 1000
#: The longest reading the page's fields may take at the end of a wait (a busy page: skipped),
#: and one frame's answer to "is a password field focused?" before each key.
READ_TIMEOUT_S = 5.0
FOCUS_TIMEOUT_S = 1.0
#: Keys that move on to something else: the text typed so far is one finished value.
_ENDS_A_RUN = frozenset({"Enter", "Tab", "Escape", "ArrowUp", "ArrowDown", "PageUp", "PageDown"})

#: True when this frame has focus and its focused element (through open shadow roots) is a
#: password field. Asked of every frame: a cross-origin frame's document is not reachable from
#: its parent, whose focused element is then the frame itself.
_PASSWORD_FOCUSED = """() => { if (!document.hasFocus()) return false; let e = document.activeElement;
  while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
  return !!e && e.tagName === 'INPUT' && (e.type || '').toLowerCase() === 'password'; }"""
#: Every text field's value in this frame and its open shadow roots: [value, is a password].
_FIELD_VALUES = """(limit) => { const out = [], skip = /^(checkbox|radio|button|submit|reset|image|file|range|color)$/i;
  const walk = (root) => { for (const e of root.querySelectorAll('input, textarea, [contenteditable]')) {
      if (out.length >= limit) return;
      if (e.tagName === 'INPUT' || e.tagName === 'TEXTAREA') {
        if (!skip.test(e.type || '') && e.value) out.push([String(e.value), (e.type || '').toLowerCase() === 'password']);
      } else if (e.isContentEditable && e.innerText) out.push([e.innerText, false]); }
    for (const e of root.querySelectorAll('*')) if (e.shadowRoot) walk(e.shadowRoot); };
  walk(document); return out; }"""


@dataclass
class TypedText:
    """The text forwarded during one wait, in runs (kept in memory only, never recorded)."""

    runs: list[tuple[str, bool]] = field(default_factory=list)  # (text, typed in a password field)
    _current: list[str] = field(default_factory=list)
    _password: bool = False
    typed: bool = False  # any key or text at all (then the fields are read at the end)

    def text(self, text: str, password: bool) -> None:
        self.typed = True
        self._current.append(text)
        self._password = self._password or password

    def key(self, key: str, password: bool) -> None:
        self.typed = True
        if key == " ":
            self.text(" ", password)
        elif key == "Backspace" and self._current:
            self._current[-1] = self._current[-1][:-1]
        elif key in _ENDS_A_RUN:
            self.moved_on()

    def moved_on(self) -> None:
        """A click or a key that leaves the field: the text so far is one value."""
        text = "".join(self._current)
        if text:
            self.runs.append((text, self._password))
        self._current, self._password = [], False


async def password_focused(page: Any) -> bool:
    """Whether a password field has focus, in any frame of ``page``. A frame that cannot answer
    within :data:`FOCUS_TIMEOUT_S` (busy, going away) counts as one that may have it: the key's
    name is then left out too."""

    async def ask(frame: Any) -> bool:
        try:
            return bool(await asyncio.wait_for(frame.evaluate(_PASSWORD_FOCUSED), FOCUS_TIMEOUT_S))
        except Exception as exc:  # a cancel is a BaseException: it passes
            log.debug("a frame did not say where its focus is", error=str(exc)[:200])
            return True

    return any(await asyncio.gather(*(ask(frame) for frame in page.frames)))


async def field_values(page: Any) -> list[tuple[str, bool]]:
    """Every text field's value on ``page`` now (all frames, open shadow roots); [] if it cannot
    be read (none, closed, busy)."""
    found: list[tuple[str, bool]] = []
    if page is None or page.is_closed():
        return found
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            for frame in page.frames:
                try:
                    found += [
                        (str(v), bool(p))
                        for v, p in await frame.evaluate(_FIELD_VALUES, MAX_VALUES)
                    ]
                except Exception as exc:  # a detached frame: the others still count
                    log.debug("could not read a frame's fields", error=str(exc)[:200])
    except Exception as exc:  # a closed page, a page busy past READ_TIMEOUT_S
        log.debug("could not read the page's fields", error=str(exc)[:200])
    return found


def learn(
    typing: TypedText,
    before: list[tuple[str, bool]],
    after: list[tuple[str, bool]],
    trace: Redactor,
    run: Redactor,
) -> int:
    """Teach the redactors what a person typed in one wait; how many values were learned.
    ``trace`` scrubs the run's trace; ``run`` (the run's redactor) gets password values."""
    typing.moved_on()
    if not typing.typed:
        return 0  # clicks only: a field that changed was changed by the page
    known = {value for value, _ in before}
    values = typing.runs + [(v, p) for v, p in after if v not in known]
    learned = list(dict.fromkeys((v[:MAX_VALUE_CHARS], p) for v, p in values if v.strip()))[
        :MAX_VALUES
    ]
    for value, password in learned:
        trace.add(TYPED, value)
        if password:
            run.add(TYPED, value)
    return len(learned)


__all__ = ["TYPED", "TypedText", "field_values", "learn", "password_focused"]
