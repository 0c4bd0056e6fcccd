"""Reading the page: extract records, get one value."""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import Locator

from browserq.actions.context import StepContext
from browserq.actions.locate import first, locate
from browserq.actions.locators import to_locator
from browserq.actions.notices import EXTRACT_LIMITED
from browserq.actions.outputs import too_large
from browserq.templates import ExtractStep, FieldSpec, GetStep
from browserq.templates.interpolate import rendered_number

_PLAYWRIGHT_ONLY = re.compile(r"^(text|role|xpath|css|id|data-testid|internal:|nth)[=:]|>>|^//|:has-text\(")

#: Runs in the page: for each matched element, read every field with a shadow-piercing
#: querySelector. One round trip for a whole page of records instead of one per field.
_EXTRACT_JS = """
(elements, [fields, bounds]) => {
  const deepQuery = (root, selector, all) => {
    const found = [];
    const visit = (node) => {
      for (const el of node.querySelectorAll(selector)) { found.push(el); if (!all) return true; }
      for (const el of [node, ...node.querySelectorAll('*')]) {
        if (el.shadowRoot && visit(el.shadowRoot) && !all) return true;
      }
      return false;
    };
    visit(root);
    return all ? found : found.slice(0, 1);
  };
  const clean = (s) => (s || '').replace(/\\s+/g, ' ').trim();
  const read = (el, spec) => spec.attr ? el.getAttribute(spec.attr) : spec.html ? el.innerHTML : clean(el.textContent);
  // Only the records asked for (limit), and never more than maxBytes of them: the size is
  // counted here, so a 50 MB extract stops in the page instead of crossing to Python.
  const [limit, maxBytes] = bounds;
  let units = 2;
  const records = [];
  for (const element of (limit === null ? elements : elements.slice(0, limit))) {
    let record;
    if (fields === null) {
      record = clean(element.textContent);
    } else {
      record = {};
      for (const [name, spec] of Object.entries(fields)) {
        const targets = spec.selector ? deepQuery(element, spec.selector, spec.all) : [element];
        const values = targets.map((t) => read(t, spec));
        record[name] = spec.all ? values : (values.length ? values[0] : null);
      }
    }
    units += JSON.stringify(record).length + 2;
    if (units > maxBytes) return {tooLarge: units};
    records.push(record);
  }
  return {records, total: elements.length};
}
"""


def _field_specs(step: ExtractStep) -> dict[str, dict[str, Any]] | None:
    """The declared fields as plain dicts (a bare string is a selector)."""
    if step.fields is None:
        return None
    specs: dict[str, dict[str, Any]] = {}
    for name, spec in step.fields.items():
        if isinstance(spec, str):
            spec = FieldSpec(selector=spec)
        specs[name] = spec.model_dump()
    return specs


async def _in_page(ctx: StepContext, locator: Locator, step: ExtractStep, fields: Any) -> tuple[list[Any], int]:
    """The records and the number of matches, read in one evaluate."""
    found = await locator.evaluate_all(_EXTRACT_JS, [fields, [step.limit, ctx.max_output_bytes]])
    if "tooLarge" in found:
        raise too_large("the extract result", int(found["tooLarge"]), ctx.max_output_bytes, at_least=True)
    return found["records"], int(found["total"])


async def extract(ctx: StepContext, step: ExtractStep) -> Any:
    """A list of records, one per element matching ``selector``, with the declared fields.

    Without ``allow_empty`` at least one match is awaited. The fast path reads first and waits
    only when nothing matched yet (then reads again): one round trip when the records are
    there, as they are after the navigation the step before awaited.
    """
    locator = locate(ctx.page, step.selector)
    fields = _field_specs(step)
    limit = None if step.limit is None else rendered_number(step.limit, "limit")
    if fields is None or all(
        not spec["selector"] or (isinstance(spec["selector"], str) and not _PLAYWRIGHT_ONLY.search(spec["selector"]))
        for spec in fields.values()
    ):
        records, total = await _in_page(ctx, locator, step, fields)
        if total == 0 and not step.allow_empty:
            await locator.first.wait_for(state="attached", timeout=ctx.timeout_ms)
            records, total = await _in_page(ctx, locator, step, fields)
    else:
        if not step.allow_empty:
            await locator.first.wait_for(state="attached", timeout=ctx.timeout_ms)
        elements = await locator.all()
        total = len(elements)
        records = [await _extract_one(element, fields) for element in elements[:limit]]
    if limit is not None and total > limit:
        ctx.warn(
            EXTRACT_LIMITED,
            f"kept the first {limit} of {total} records matching {step.selector!r} (limit: {limit})",
        )
    return records


async def _extract_one(element: Locator, fields: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Slow path for field selectors only Playwright understands (text=, xpath=, locator mappings)."""
    record: dict[str, Any] = {}
    for name, spec in fields.items():
        targets = [element] if not spec["selector"] else await to_locator(element, spec["selector"]).all()
        if not spec["all"]:
            targets = targets[:1]
        values = [await _read(target, spec) for target in targets]
        record[name] = values if spec["all"] else (values[0] if values else None)
    return record


async def _read(element: Locator, spec: dict[str, Any]) -> Any:
    """One field's value of one element (attribute, HTML or whitespace-collapsed text)."""
    if spec["attr"]:
        return await element.get_attribute(spec["attr"])
    if spec["html"]:
        return await element.inner_html()
    return " ".join((await element.text_content() or "").split())


async def get(ctx: StepContext, step: GetStep) -> Any:
    """One value of the page: its URL or title, or an element's count, text, attribute, HTML or value."""
    page = ctx.page
    if step.what == "url":
        return page.url
    if step.what == "title":
        return await page.title()
    assert step.selector is not None  # the model requires it for the other kinds
    if step.what == "count":
        return await locate(page, step.selector).count()
    locator = first(ctx, step.selector)
    if step.what == "text":
        return " ".join((await locator.text_content(timeout=ctx.timeout_ms) or "").split())
    if step.what == "attribute":
        assert step.attribute is not None
        return await locator.get_attribute(step.attribute, timeout=ctx.timeout_ms)
    if step.what == "html":
        return await locator.inner_html(timeout=ctx.timeout_ms)
    return await locator.input_value(timeout=ctx.timeout_ms)
