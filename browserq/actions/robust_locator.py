"""The most robust locator for an element: the first of role + name, label, test id,
placeholder, a short CSS selector, role + name within a parent, a CSS path that matches that
element and nothing else — each candidate checked by asking the page what it matches, through
:func:`~browserq.actions.locators.to_locator`, the function runs use (a locator chosen here finds
the same element in a template). Role + name with ``nth`` is the last resort.

Two callers: ``browserq locate`` ranks every interactive element of a page
(:mod:`browserq.cli.locate_page`, which marks the elements with :data:`MARK` and compares
marks), and a session captures one for the node a ref command aims at, before its action runs
(:func:`locator_for`: the node's role and name come from the snapshot that issued the ref; the
page is not marked — candidates are compared with the node itself). Freezing a session into a
template writes that locator where the command had its ref.

Nothing here takes an aria snapshot: that would replace the one a session's refs resolve against.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from playwright.async_api import ElementHandle, Page

from browserq.actions.locators import to_locator
from browserq.browsers.api import Error as PlaywrightError
from browserq.templates import ACTIONS, ARIA_ROLES

#: The attribute that names an element while ``browserq locate`` inspects a page (never printed).
MARK = "data-browserq-locate"

#: Describes one element: its tag, label, test id, placeholder and the CSS selectors that match it
#: alone (checked here first, cheaply, then again by Playwright). With an ``index`` it also marks
#: the element (``known`` when it was marked already); with ``null`` the page is left untouched.
DESCRIBE_JS = r"""
(el, index) => {
  const MARK = 'data-browserq-locate';
  if (index !== null) {
    const seen = el.getAttribute(MARK);
    if (seen !== null) return {index: Number(seen), known: true};
    el.setAttribute(MARK, String(index));
  }
  const tag = el.tagName.toLowerCase();
  const attr = (n) => { const v = el.getAttribute(n); return v && v.trim() ? v.trim() : null; };
  const clean = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const qa = (v) => '"' + v.replace(/["\\]/g, '\\$&') + '"';
  const root = el.getRootNode();
  const count = (css) => { try { return root.querySelectorAll(css).length; } catch (e) { return 0; } };
  const stable = (id) => !!id && /^[A-Za-z][\w-]*$/.test(id) && !/\d{3,}/.test(id);
  const byId = (node) => stable(node.id) && count('#' + CSS.escape(node.id)) === 1 ? '#' + CSS.escape(node.id) : null;
  let label = null;
  if (el.labels && el.labels.length) label = clean(el.labels[0].innerText || el.labels[0].textContent);
  if (!label) label = attr('aria-label');
  const css = [];
  const own = byId(el);
  if (own) css.push(own);
  const name = attr('name'), type = attr('type');
  if (name) css.push(`${tag}[name=${qa(name)}]`);
  if (name && type) css.push(`${tag}[type=${qa(type)}][name=${qa(name)}]`);
  const href = tag === 'a' ? attr('href') : null;
  if (href && href.length <= 80) css.push(`a[href=${qa(href)}]`);
  let scope = null;
  for (let p = el.parentElement; p && p !== document.body && !scope; p = p.parentElement) {
    scope = byId(p);
    const tid = p.getAttribute('data-testid');
    if (!scope && tid && count(`[data-testid=${qa(tid)}]`) === 1) scope = `[data-testid=${qa(tid)}]`;
  }
  const parts = [];
  for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
    const anchor = node === el ? null : byId(node);
    if (anchor || node === document.body) { parts.unshift(anchor || 'body'); break; }
    const t = node.tagName.toLowerCase();
    const same = node.parentElement ? [...node.parentElement.children].filter((c) => c.tagName === node.tagName) : [node];
    parts.unshift(same.length > 1 ? `${t}:nth-of-type(${same.indexOf(node) + 1})` : t);
  }
  const options = tag === 'select'
    ? [...el.options].slice(0, 50).map((o) => ({value: o.value, label: clean(o.label || o.text)})) : null;
  return {index, known: false, tag, type, label, testid: attr('data-testid'), placeholder: attr('placeholder'),
          role: attr('role'), text: clean(el.innerText).slice(0, 80), css: css.filter((c) => count(c) === 1),
          scope, path: parts.join(' > '), options, multiple: tag === 'select' && el.multiple};
}
"""
_MARKS_JS = f"(els) => els.map((e) => e.getAttribute('{MARK}'))"
#: The element described without marking it; None inside an iframe (the page's frame is the top one).
_DESCRIBE_TOP_JS = f"(el) => window.parent !== window ? null : ({DESCRIBE_JS})(el, null)"
_ONLY_JS = "(els, node) => els.length === 1 && els[0] === node"
_POSITION_JS = "(els, node) => els.indexOf(node)"


@dataclass
class Element:
    """One element: what the DOM says of it, and its role and accessible name."""

    index: int
    info: dict[str, Any]
    role: str | None = None
    name: str | None = None


@dataclass
class Found:
    """An element and the locator chosen for it (``selector`` None: nothing matched it alone)."""

    element: Element
    selector: str | dict[str, Any] | None
    strategy: str
    action: str
    notes: list[str] = field(default_factory=list)


class Matcher(Protocol):
    """Asks the page whether a locator finds the element being ranked."""

    async def only(self, selector: str | dict[str, Any]) -> bool:
        """Whether ``selector`` matches the element and nothing else."""

    async def position(self, selector: str | dict[str, Any]) -> int | None:
        """The element's index among what ``selector`` matches (None: not among them)."""


def valid_role(role: Any) -> str | None:
    """``role`` when ``get_by_role`` (and so a template) knows it, else None."""
    return role if isinstance(role, str) and role in ARIA_ROLES else None


def candidates(element: Element) -> Iterator[tuple[str, str | dict[str, Any]]]:
    """Locators for ``element``, most robust first: role+name, label, test id, placeholder,
    short CSS, role+name within a parent, a CSS path."""
    info, role, name = element.info, element.role, element.name
    if role and name:
        yield "role", {"role": role, "name": name}
        yield "role", {"role": role, "name": name, "exact": True}
    for key, target in (("label", "label"), ("testid", "test_id"), ("placeholder", "placeholder")):
        if info.get(key):
            yield target, {target: info[key]}
            if target != "test_id":
                yield target, {target: info[key], "exact": True}
    if role and not name:
        yield "role", {"role": role}
    for css in info.get("css") or []:
        yield "css", css
    if role and name and info.get("scope"):
        yield "role within", {"role": role, "name": name, "exact": True, "within": info["scope"]}
    if info.get("path"):
        yield "css path", info["path"]


async def rank(element: Element, matcher: Matcher) -> Found:
    """The first candidate that matches ``element`` and nothing else; else role+name with nth."""
    action = action_for(element)
    for strategy, selector in candidates(element):
        if await matcher.only(selector):
            return Found(element, selector, strategy, action)
    if element.role and element.name:
        selector = {"role": element.role, "name": element.name, "exact": True}
        position = await matcher.position(selector)
        if position is not None:
            nth = {**selector, "nth": position}
            return Found(element, nth, "role + nth", action, ["depends on the order of the page"])
    return Found(element, None, "none", action, ["no locator matches this element alone"])


class MarkMatcher:
    """Compares what a locator matches with the element's :data:`MARK` (``browserq locate``)."""

    def __init__(self, page: Page, mark: str) -> None:
        self.page, self.mark = page, mark

    async def marks(self, selector: str | dict[str, Any]) -> list[str | None]:
        """The marks of every element ``selector`` matches (as a template run would find them)."""
        try:
            return list(await to_locator(self.page, selector).evaluate_all(_MARKS_JS))
        except PlaywrightError:
            return []

    async def only(self, selector: str | dict[str, Any]) -> bool:
        return await self.marks(selector) == [self.mark]

    async def position(self, selector: str | dict[str, Any]) -> int | None:
        found = await self.marks(selector)
        return found.index(self.mark) if self.mark in found else None


class HandleMatcher:
    """Compares what a locator matches with the element itself (the page is not touched)."""

    def __init__(self, page: Page, handle: ElementHandle) -> None:
        self.page, self.handle = page, handle

    async def only(self, selector: str | dict[str, Any]) -> bool:
        try:
            return bool(await to_locator(self.page, selector).evaluate_all(_ONLY_JS, self.handle))
        except PlaywrightError:
            return False

    async def position(self, selector: str | dict[str, Any]) -> int | None:
        try:
            index = int(await to_locator(self.page, selector).evaluate_all(_POSITION_JS, self.handle))
        except PlaywrightError:
            return None
        return index if index >= 0 else None


async def best(page: Page, element: Element) -> Found:
    """The most robust locator of an element ``browserq locate`` marked on ``page``."""
    return await rank(element, MarkMatcher(page, str(element.index)))


async def locator_for(page: Page, selector: str, *, role: str | None, name: str | None,
                      timeout_ms: float) -> Found:
    """The most robust locator of the one element ``selector`` names on ``page`` (a session
    ref's ``aria-ref=`` selector), whose ``role`` and accessible ``name`` the caller knows.
    An element inside an iframe gets none (a template reaches it with ``iframe#x >>> …``)."""
    handle = await page.locator(selector).element_handle(timeout=timeout_ms)
    try:
        element = Element(-1, {}, role=valid_role(role), name=name or None)
        described = await handle.evaluate(_DESCRIBE_TOP_JS)  # one call: where it is, and what
        if described is None:
            return Found(element, None, "none", "click", ["inside an iframe"])
        element.info = dict(described)
        element.role = element.role or valid_role(element.info.get("role"))
        return await rank(element, HandleMatcher(page, handle))
    finally:
        await handle.dispose()


def action_for(element: Element) -> str:
    """The action a template would most likely use on the element."""
    info, role = element.info, element.role
    tag, kind = info.get("tag"), (info.get("type") or "").lower()
    if tag == "select":
        return "select"
    if role in ("checkbox", "radio", "switch") or kind in ("checkbox", "radio"):
        return "check"
    if tag == "input" and kind == "file":
        return "upload" if "upload" in ACTIONS else "click"
    buttons = ("button", "submit", "reset", "image", "range", "color")
    if role in ("textbox", "searchbox", "spinbutton", "combobox") or tag == "textarea" or (
        tag == "input" and kind not in buttons
    ):
        return "fill"
    return "click"


__all__ = ["DESCRIBE_JS", "MARK", "Element", "Found", "HandleMatcher", "MarkMatcher", "Matcher",
           "action_for", "best", "candidates", "locator_for", "rank", "valid_role"]
