"""What ``browserq locate`` does on the page: find the interactive elements and, for each, the
most robust locator that matches it and nothing else.

Elements come from two sources: the page's accessibility snapshot (Playwright's
``aria_snapshot(mode="ai")``, whose ``[ref=…]`` lines are resolved with ``aria-ref=``) gives the
role and accessible name exactly as ``get_by_role`` computes them; a DOM query adds links,
buttons, inputs, selects, textareas, ``[role]`` and ``[data-testid]`` elements the snapshot
leaves out. Each element is marked with :data:`MARK` while the page is inspected, so every
candidate locator is checked by asking the page which elements it matches; the ranking itself
(:mod:`browserq.actions.robust_locator`) is the one a session uses to capture the locator of the
node a ref command aims at, and checks through the function runs use: a locator printed here
finds the same element in a template.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml
from playwright.async_api import Page

from browserq.actions.robust_locator import (
    DESCRIBE_JS,
    MARK,
    Element,
    Found,
    action_for,
    best,
    candidates,
    valid_role,
)
from browserq.browsers.api import Error as PlaywrightError

#: Roles a visitor acts on: the snapshot's other nodes (headings, lists, text) are left out.
INTERACTIVE_ROLES = frozenset({
    "button", "checkbox", "combobox", "link", "listbox", "menuitem", "menuitemcheckbox",
    "menuitemradio", "option", "radio", "searchbox", "slider", "spinbutton", "switch", "tab",
    "textbox", "treeitem",
})
#: One snapshot line's key: ``button "Send" [disabled] [ref=e7]``.
_SNAPSHOT_KEY = re.compile(r'^(?P<role>[a-z]+)(?: (?P<name>"(?:[^"\\]|\\.)*"))?(?P<attrs>(?: \[[^\]]*\])*)$')
_REF = re.compile(r"\[ref=([A-Za-z0-9]+)\]")
_COLLECT_JS = f"""
(max) => {{
  const describe = {DESCRIBE_JS};
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
_MARK_JS = f"(el, index) => el.tagName === 'OPTION' ? null : ({DESCRIBE_JS})(el, index)"
_ORDER_JS = f"() => [...document.querySelectorAll('[{MARK}]')].map((e) => Number(e.getAttribute('{MARK}')))"
_UNMARK_JS = f"() => document.querySelectorAll('[{MARK}]').forEach((e) => e.removeAttribute('{MARK}'))"


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
    elements = {d["index"]: Element(d["index"], d, role=valid_role(d.get("role"))) for d in found}
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
