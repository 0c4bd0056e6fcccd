"""``snapshot``: the page's accessibility tree as text, with a session ref on each node to act on.

Playwright's ``page.aria_snapshot(mode="ai")`` (public in every driver browserq supports) gives
the tree, iframes' content under their ``iframe`` node, and its own refs on visible nodes that
take pointer events. Here those refs become the session's (:class:`~browserq.sessions.refs.RefBook`),
the ``interactive`` view keeps only what can be acted on (and what says where it is), and the text
stays within a budget, cut at a whole line with a marker that says so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from playwright.async_api import Frame, Page

from browserq.browsers.errors import translate
from browserq.redact import Redactor
from browserq.sessions.aria_lines import AriaLine, parse_lines
from browserq.sessions.refs import IssuedRef, Mark, RefBook

#: The default text budget of a snapshot, in characters.
DEFAULT_BUDGET = 100_000
#: The smallest budget: room for a few lines and the marker.
MIN_BUDGET = 1_000
#: A snapshot that raced a navigation is taken again, at most this many times in all.
MAX_TRIES = 3
#: How long finding the frame behind an ``iframe`` node may take.
FRAME_LOOKUP_TIMEOUT_MS = 2_000

#: Roles an agent acts on (the ``interactive`` view keeps them, and any node with a pointer cursor).
ACTIONABLE_ROLES = frozenset({
    "button", "link", "textbox", "searchbox", "combobox", "listbox", "option", "checkbox", "radio",
    "switch", "slider", "spinbutton", "menuitem", "menuitemcheckbox", "menuitemradio", "tab",
    "treeitem", "gridcell",
})
#: Shown in the ``interactive`` view for context, with their text.
CONTEXT_ROLES = frozenset({"heading", "alert", "dialog", "alertdialog", "status"})
_PLAYWRIGHT_REF = re.compile(r"^(f\d+)?e\d+$")


@dataclass(frozen=True)
class Snapshot:
    """One snapshot: ``text`` (what an agent reads), the ``epoch`` and ``url`` it was taken at,
    and the refs it shows (ref → what it was given to)."""

    text: str
    epoch: int
    url: str
    refs: dict[str, IssuedRef] = field(default_factory=dict)
    truncated: bool = False
    interactive: bool = False


class Snapshotter:
    """Takes snapshots of a session's page, issuing refs from the session's :class:`RefBook`;
    the text is redacted like every record (a secret typed into a field is not shown)."""

    def __init__(self, book: RefBook, redactor: Redactor | None = None) -> None:
        self.book = book
        self.redactor = redactor or Redactor()

    async def take(self, page: Page, *, interactive: bool = False, budget: int = DEFAULT_BUDGET,
                   timeout_ms: float = 30_000) -> Snapshot:
        """The page's tree now. A navigation while it was read means another read (refs from a
        document that is gone are never handed out as current). A page that cannot answer fails
        like a step (``StepFailed``: TIMEOUT, PAGE_CRASHED…; an InfrastructureError when the
        browser is gone), never with Playwright's exception."""
        budget = max(MIN_BUDGET, int(budget))
        for _ in range(MAX_TRIES):
            mark = self.book.mark(page)
            try:
                raw = await page.aria_snapshot(mode="ai", timeout=timeout_ms)
            except Exception as exc:
                browser = page.context.browser
                raise translate(exc, browser_connected=browser is None or browser.is_connected()) from exc
            lines = parse_lines(raw)
            frames = await _frames(page, lines)
            if self.book.unchanged_since(mark, list(frames.values())):
                break
        for prefix, frame in frames.items():
            self.book.retire(mark, frame, {line.ref for line in lines if line.ref and _prefix(line.ref) == prefix})
        lines = _mask_passwords(lines, await _password_values(list(frames.values())))
        shown = _interactive(lines) if interactive else [(line, line.depth) for line in lines]
        text, refs, cut = self._render(shown, frames, mark, budget)
        return Snapshot(text, mark.epoch, page.url, refs, cut, interactive)

    def _render(self, shown: list[tuple[AriaLine, int]], frames: dict[str, Frame], mark: Mark,
                budget: int) -> tuple[str, dict[str, IssuedRef], bool]:
        """The text within ``budget`` (a marker line says what was cut), and the refs it shows."""
        out: list[str] = []
        refs: dict[str, IssuedRef] = {}
        used = 0
        for index, (line, depth) in enumerate(shown):
            ref = self._ref_for(line, frames, mark)
            text = self.redactor.text(line.with_ref(ref).render(depth))
            marker = _cut_marker(budget, len(shown) - index)
            last = index == len(shown) - 1
            if used + len(text) + (0 if last else 1 + len(marker)) > budget:
                out.append(marker)
                return "\n".join(out), refs, True
            out.append(text)
            used += len(text) + 1
            if ref is not None and (issued := self.book.issued(ref)) is not None:
                refs[ref] = issued
        return "\n".join(out), refs, False

    def _ref_for(self, line: AriaLine, frames: dict[str, Frame], mark: Mark) -> str | None:
        """The session's ref for a line's node; None when the line has none, or its frame was
        not found (then nothing can act through it)."""
        if line.ref is None or line.role is None:
            return None
        prefix = _prefix(line.ref)
        frame = frames.get(prefix) if prefix is not None else None
        if frame is None:
            return None
        return self.book.issue(mark, frame, line.ref, line.role, line.name)


def _prefix(ref: str) -> str | None:
    """The frame part of Playwright's ref (``"f1"`` of ``f1e3``, ``""`` of ``e3``); None for no ref."""
    match = _PLAYWRIGHT_REF.match(ref)
    return (match.group(1) or "") if match else None


def _cut_marker(budget: int, lines_left: int) -> str:
    return (f"# [snapshot cut: its {budget}-character budget is spent; {lines_left} more lines not "
            f"shown. Take it with interactive=True, or a larger budget]")


async def _frames(page: Page, lines: list[AriaLine]) -> dict[str, Frame]:
    """Playwright's ref prefix (``f1``…) → the frame it stands for, found through the ``iframe``
    node above the frame's lines. The main frame's is the first ref's (``""`` in a first
    document; Playwright numbers the main frame anew after some navigations)."""
    first = next((_PLAYWRIGHT_REF.match(line.ref) for line in lines if line.ref), None)
    frames: dict[str, Frame] = {(first.group(1) or "") if first else "": page.main_frame}
    for index, line in enumerate(lines):
        if line.role != "iframe" or line.ref is None:
            continue
        prefix = _child_prefix(lines, index)
        if prefix is None or prefix in frames:
            continue
        try:
            handle = await page.locator(f"aria-ref={line.ref}").element_handle(timeout=FRAME_LOOKUP_TIMEOUT_MS)
            frame = await handle.content_frame()
            await handle.dispose()
        except Exception:  # the iframe went away: its nodes get no refs
            continue
        if frame is not None:
            frames[prefix] = frame
    return frames


#: The values of the password fields of a document (Playwright shows a field's value in clear).
_PASSWORDS_JS = """() => Array.from(Document.prototype.querySelectorAll.call(document, 'input[type=password]'),
                        (field) => field.value).filter((value) => value)"""
#: What a password field's value is shown as.
PASSWORD_SHOWN = ': "••••••"'


async def _password_values(frames: list[Frame]) -> set[str]:
    values: set[str] = set()
    for frame in frames:
        try:
            values.update(str(value) for value in await frame.evaluate(_PASSWORDS_JS))
        except Exception:  # a frame that went away has no fields to hide
            continue
    return values


def _mask_passwords(lines: list[AriaLine], passwords: set[str]) -> list[AriaLine]:
    """Lines with the value of every password field shown as dots."""
    if not passwords:
        return lines
    shown = {form for value in passwords for form in (": " + value, ": " + json.dumps(value, ensure_ascii=False))}
    return [replace(line, rest=PASSWORD_SHOWN) if line.role == "textbox" and line.rest in shown else line
            for line in lines]


def _child_prefix(lines: list[AriaLine], index: int) -> str | None:
    """The ref prefix of the first node inside the ``iframe`` line at ``index``."""
    depth = lines[index].depth
    for line in lines[index + 1:]:
        if line.depth <= depth:
            return None
        match = _PLAYWRIGHT_REF.match(line.ref or "")
        if match and match.group(1):
            return match.group(1)
    return None


def _interactive(lines: list[AriaLine]) -> list[tuple[AriaLine, int]]:
    """Only the nodes to act on, each under the named nodes it sits in (form, dialog, list…),
    with headings and alerts for context; properties (``/url``) stay under their node."""
    parents: list[int | None] = []
    stack: list[int] = []
    for index, line in enumerate(lines):
        while stack and lines[stack[-1]].depth >= line.depth:
            stack.pop()
        parents.append(stack[-1] if stack else None)
        stack.append(index)
    keep = [_acts(line) or line.role in CONTEXT_ROLES for line in lines]
    for index, line in enumerate(lines):
        parent = parents[index]
        if line.is_property and parent is not None and _acts(lines[parent]):
            keep[index] = True
    for index in [i for i, kept in enumerate(keep) if kept]:
        parent = parents[index]
        while parent is not None:
            if _context(lines[parent]):
                keep[parent] = True
            parent = parents[parent]
    shown: list[tuple[AriaLine, int]] = []
    for index, line in enumerate(lines):
        if keep[index]:
            depth, parent = 0, parents[index]
            while parent is not None:
                depth += keep[parent]
                parent = parents[parent]
            shown.append((line, depth))
    return shown


def _acts(line: AriaLine) -> bool:
    return line.ref is not None and (line.role in ACTIONABLE_ROLES or "cursor=pointer" in line.attributes)


def _context(line: AriaLine) -> bool:
    """A node worth showing above what it holds: anything named, frames and landmarks."""
    return line.role is not None and line.role != "text" and (
        bool(line.name) or line.role in ("iframe", "form", "dialog", "navigation", "main", "list", "table")
    )
