"""What ``browserq locate`` does on the page: find the interactive elements and, for each, the
most robust locator that matches it and nothing else.

Elements come from two sources: the page's accessibility snapshot (Playwright's
``aria_snapshot(mode="ai")``, whose ``[ref=…]`` lines are resolved with ``aria-ref=``) gives the
role and accessible name exactly as ``get_by_role`` computes them; a DOM query adds links,
buttons, inputs, selects, textareas, ``[role]`` and ``[data-testid]`` elements the snapshot
leaves out. Each element is marked with :data:`MARK` while the page is inspected, so every
candidate locator is checked by asking the page which elements it matches, through
:func:`~browserq.actions.locators.to_locator`, the function runs use: a locator printed here
finds the same element in a template.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from playwright.async_api import Page

from browserq.actions.locators import to_locator
from browserq.browsers.api import Error as PlaywrightError
from browserq.templates import ACTIONS, ARIA_ROLES

#: The attribute that names an element while the page is inspected (never printed).
MARK = "data-browserq-locate"
#: Roles a visitor acts on: the snapshot's other nodes (headings, lists, text) are left out.
INTERACTIVE_ROLES = frozenset({
    "button", "checkbox", "combobox", "link", "listbox", "menuitem", "menuitemcheckbox",
    "menuitemradio", "option", "radio", "searchbox", "slider", "spinbutton", "switch", "tab",
    "textbox", "treeitem",
})
#: One snapshot line's key: ``button "Send" [disabled] [ref=e7]``.
_SNAPSHOT_KEY = re.compile(r'^(?P<role>[a-z]+)(?: (?P<name>"(?:[^"\\]|\\.)*"))?(?P<attrs>(?: \[[^\]]*\])*)$')
_REF = re.compile(r"\[ref=([A-Za-z0-9]+)\]")

#: Describes one element and marks it (``known`` when it was marked already). CSS candidates
#: are checked for uniqueness here first (cheap), then again by Playwright.
_DESCRIBE_JS = r"""
(el, index) => {
  const MARK = 'data-browserq-locate';
  const seen = el.getAttribute(MARK);
  if (seen !== null) return {index: Number(seen), known: true};
  el.setAttribute(MARK, String(index));
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
_COLLECT_JS = f"""
(max) => {{
  const describe = {_DESCRIBE_JS};
  const INTERACTIVE = new Set({sorted(INTERACTIVE_ROLES)!r});
  const NATIVE = 'a[href], button, input, select, textarea, summary';
  const visible = (el) => {{
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden';
  }};
  const found = [];
  for (const el of document.querySelectorAll(NATIVE + ', [role], [data-testid]')) {{
    if (found.length >= max) break;
    if (el.matches('input[type=hidden]') || !visible(el)) continue;
    const role = el.getAttribute('role');
    if (!el.matches(NATIVE) && !el.hasAttribute('data-testid') && !INTERACTIVE.has(role)) continue;
    found.push(describe(el, found.length));
  }}
  return found;
}}
"""
#: A snapshot node's element; a native ``<option>`` is the ``select`` step's business (None).
_MARK_JS = f"(el, index) => el.tagName === 'OPTION' ? null : ({_DESCRIBE_JS})(el, index)"
_ORDER_JS = f"() => [...document.querySelectorAll('[{MARK}]')].map((e) => Number(e.getAttribute('{MARK}')))"
_MARKS_JS = f"(els) => els.map((e) => e.getAttribute('{MARK}'))"
_UNMARK_JS = f"() => document.querySelectorAll('[{MARK}]').forEach((e) => e.removeAttribute('{MARK}'))"


@dataclass
class Element:
    """One interactive element: what the DOM says of it, and its role and accessible name."""

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


def snapshot_nodes(snapshot: str) -> Iterator[tuple[str, str | None, str]]:
    """``(role, name, ref)`` of every node of an ``aria_snapshot(mode="ai")`` that has a ref."""
    try:
        tree = yaml.safe_load(snapshot)
    except yaml.YAMLError:
        return
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            for key, value in node.items():
                yield from _key_node(str(key))
                stack.append(value)
        elif isinstance(node, str):
            yield from _key_node(node)


def _key_node(key: str) -> Iterator[tuple[str, str | None, str]]:
    match = _SNAPSHOT_KEY.match(key)
    ref = _REF.search(key)
    if match is None or ref is None:
        return
    name = match.group("name")
    yield match.group("role"), (yaml.safe_load(name) if name else None), ref.group(1)


async def collect(page: Page, limit: int) -> list[Element]:
    """The page's interactive elements in document order (at most ``limit``), marked."""
    found = await page.evaluate(_COLLECT_JS, limit)
    elements = {d["index"]: Element(d["index"], d, role=_valid_role(d.get("role"))) for d in found}
    next_index = len(elements)
    for role, name, ref in snapshot_nodes(await page.aria_snapshot(mode="ai")):
        if role not in INTERACTIVE_ROLES or not ref.startswith("e"):  # f1e2…: inside an iframe
            continue
        try:
            described = await page.locator(f"aria-ref={ref}").evaluate(_MARK_JS, next_index)
        except PlaywrightError:
            continue  # the page changed under the snapshot
        if described is None:
            continue
        element = elements.get(described["index"])
        if element is None:
            if len(elements) >= limit:
                continue
            element = elements[described["index"]] = Element(described["index"], described)
            next_index += 1
        element.role, element.name = role, name or None
    order = [i for i in await page.evaluate(_ORDER_JS) if i in elements]
    order += [i for i in elements if i not in order]  # inside open shadow roots
    return [elements[i] for i in order]


def _valid_role(role: Any) -> str | None:
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


async def matches(page: Page, selector: str | dict[str, Any]) -> list[str | None]:
    """The marks of every element ``selector`` matches (as a template run would find them)."""
    try:
        return list(await to_locator(page, selector).evaluate_all(_MARKS_JS))
    except PlaywrightError:
        return []


async def best(page: Page, element: Element) -> Found:
    """The first candidate that matches ``element`` and nothing else; else role+name with nth."""
    action = action_for(element)
    mark = str(element.index)
    for strategy, selector in candidates(element):
        if await matches(page, selector) == [mark]:
            return Found(element, selector, strategy, action)
    if element.role and element.name:
        selector = {"role": element.role, "name": element.name, "exact": True}
        found = await matches(page, selector)
        if mark in found:
            nth = {**selector, "nth": found.index(mark)}
            return Found(element, nth, "role + nth", action, ["depends on the order of the page"])
    return Found(element, None, "none", action, ["no locator matches this element alone"])


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


async def find_locators(page: Page, limit: int) -> list[Found]:
    """Every interactive element of the loaded page with its best locator."""
    elements = await collect(page, limit)
    try:
        return [await best(page, element) for element in elements]
    finally:
        try:
            await page.evaluate(_UNMARK_JS)
        except PlaywrightError:
            pass


__all__ = ["MARK", "Element", "Found", "action_for", "best", "candidates", "collect",
           "find_locators", "snapshot_nodes"]
