"""Step results within bounds: measured where they are made, in the page, before they cross.

A page can return anything from an ``eval``: 100 MB, a circular object, a BigInt of 5,000 digits.
The result is converted to JSON *in the page* (the rules of :mod:`browserq.recordable`) and its
size is checked there; only a result within ``BROWSERQ_MAX_STEP_OUTPUT_BYTES`` crosses to Python,
as one JSON string. Everything else a step returns is checked in Python by
:func:`check_step_output`, and :class:`OutputBudget` keeps the run's outputs within
``BROWSERQ_MAX_RUN_OUTPUT_BYTES``. Too large fails the step ``OUTPUT_TOO_LARGE``; not data
(circular, too deep) fails it ``OUTPUT_INVALID``: nothing too large ever reaches the database,
the result backend or a log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Page

from browserq import recordable
from browserq.errors import Codes, StepFailed

#: Runs in the page. Evaluates the expression exactly as Playwright's ``page.evaluate`` does
#: (indirect ``eval``; a function result is called; a promise awaited), then walks the value
#: once, converting it to JSON the way browserq.recordable does and counting UTF-16 units as it
#: goes (a lower bound of the UTF-8 bytes) so a huge value is abandoned early. Returns
#: {kind: "ok", text, bytes} or the problem; only that crosses to Python.
EVAL_JS = """
async ([expression, maxBytes, maxDepth]) => {
  let value = globalThis.eval(expression);
  if (typeof value === 'function') value = value();
  value = await value;
  class Stop { constructor(kind, detail) { this.kind = kind; this.detail = detail; } }
  let units = 0;
  const add = (n) => { units += n; if (units > maxBytes) throw new Stop('too_large', units); };
  const lone = /[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]/g;
  const str = (s) => {
    s = String(s);
    s = s.toWellFormed ? s.toWellFormed() : s.replace(lone, '\\ufffd');
    add(s.length + 2);
    return s;
  };
  const onPath = new Set();
  const isExotic = (v) => v instanceof RegExp || v instanceof Error || v === globalThis ||
    (typeof Node !== 'undefined' && v instanceof Node) || v instanceof Promise ||
    v instanceof WeakMap || v instanceof WeakSet;
  const walk = (v, depth, where) => {
    switch (typeof v) {
      case 'string': return str(v);
      case 'number': add(8); return Number.isFinite(v) ? v : null;
      case 'boolean': add(5); return v;
      case 'bigint':
        if (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) { add(16); return Number(v); }
        return str(v.toString());
      case 'undefined': case 'function': case 'symbol': add(4); return null;
    }
    if (v === null) { add(4); return null; }
    if (isExotic(v)) return str(v);
    if (depth >= maxDepth) throw new Stop('too_deep', where);
    if (onPath.has(v)) throw new Stop('circular', where);
    onPath.add(v);
    try {
      if (typeof v.toJSON === 'function') {
        let j = null;
        try { j = v.toJSON(); } catch (e) { j = null; }
        return walk(j, depth + 1, where);
      }
      if (Array.isArray(v) || ArrayBuffer.isView(v) || v instanceof Set) {
        const out = [];
        add(2);
        let i = 0;
        for (const item of v) { add(1); out.push(walk(item, depth + 1, `${where}[${i++}]`)); }
        return out;
      }
      if (v instanceof Map) {
        const out = [];
        add(2);
        let i = 0;
        for (const [k, item] of v) { add(4); out.push([walk(k, depth + 2, `${where}[${i}][0]`), walk(item, depth + 2, `${where}[${i++}][1]`)]); }
        return out;
      }
      const out = {};
      add(2);
      for (const key of Object.keys(v)) {
        const item = v[key];
        if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
        const name = str(key);
        add(2);
        out[name] = walk(item, depth + 1, `${where}.${name}`);
      }
      return out;
    } finally {
      onPath.delete(v);
    }
  };
  try {
    const text = JSON.stringify(walk(value, 0, '$'));
    const bytes = new TextEncoder().encode(text).length;
    if (bytes > maxBytes) return {kind: 'too_large', detail: bytes};
    return {kind: 'ok', text, bytes};
  } catch (e) {
    if (e instanceof Stop) return {kind: e.kind, detail: e.detail};
    throw e;
  }
}
"""

SETTING = "BROWSERQ_MAX_STEP_OUTPUT_BYTES"
RUN_SETTING = "BROWSERQ_MAX_RUN_OUTPUT_BYTES"


def too_large(what: str, size: int, limit: int, *, at_least: bool = False) -> StepFailed:
    amount = f"at least {size:,}" if at_least else f"{size:,}"
    return StepFailed(
        Codes.OUTPUT_TOO_LARGE,
        f"{what} is {amount} bytes of JSON, over {SETTING}={limit:,}; return less (pick fields, "
        f"set extract's limit, slice the value) or raise the setting",
    )


def not_data(what: str, problem: str, where: str) -> StepFailed:
    return StepFailed(
        Codes.OUTPUT_INVALID,
        f"{what} cannot be stored: {problem} at {where}; return plain data "
        f"(e.g. pick the fields you need) instead of the object itself",
    )


async def evaluate_bounded(page: Page, expression: str, max_bytes: int) -> Any:
    """``page.evaluate(expression)``, but the value is converted and measured in the page and
    crosses to Python only when it is data within ``max_bytes``."""
    verdict = await page.evaluate(EVAL_JS, [expression, max_bytes, recordable.MAX_DEPTH])
    kind = verdict.get("kind")
    if kind == "ok":
        return json.loads(verdict["text"])
    if kind == "too_large":
        return _raise(too_large("the eval result", int(verdict["detail"]), max_bytes, at_least=True))
    problem = "a circular reference" if kind == "circular" else f"nested deeper than {recordable.MAX_DEPTH} levels"
    return _raise(not_data("the eval result", problem, str(verdict.get("detail"))))


def _raise(failure: StepFailed) -> Any:
    raise failure


def check_step_output(value: Any, max_bytes: int, what: str = "the step's result") -> tuple[Any, int]:
    """``value`` made recordable (strict: circular/too deep fail ``OUTPUT_INVALID``) and its
    JSON size; over ``max_bytes`` fails ``OUTPUT_TOO_LARGE``."""
    if value is None:
        return None, 4
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        if "\\u0000" in text or not recordable.utf8_encodable(text):
            raise ValueError("needs cleaning")
    except (ValueError, TypeError, RecursionError):
        try:
            value = recordable.recordable(value, strict=True)
        except recordable.NotRecordable as exc:
            raise not_data(what, exc.problem, exc.where) from None
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > max_bytes:
        raise too_large(what, size, max_bytes)
    return value, size


@dataclass
class OutputBudget:
    """The JSON size of each named output, so a run's outputs never pass ``max_bytes``
    (an upper bound of ``len(json.dumps(outputs))``, kept without re-serialising them)."""

    max_bytes: int
    sizes: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, outputs: dict[str, Any], max_bytes: int) -> OutputBudget:
        budget = cls(max_bytes)
        for name, value in outputs.items():
            budget.sizes[name] = recordable.sized(value)[1]
        return budget

    @property
    def total(self) -> int:
        return 2 + sum(len(name.encode("utf-8")) + 6 + size for name, size in self.sizes.items())

    def admit(self, name: str, size: int, *, accumulate: bool) -> None:
        """Count a step's output stored under ``name``; ``OUTPUT_TOO_LARGE`` (nothing counted)
        when the run's outputs would pass the limit."""
        new = self.sizes.get(name, 0) + size if accumulate else size
        before = self.sizes.get(name)
        self.sizes[name] = new
        total = self.total
        if total > self.max_bytes:
            if before is None:
                del self.sizes[name]
            else:
                self.sizes[name] = before
            raise StepFailed(
                Codes.OUTPUT_TOO_LARGE,
                f"storing this result in outputs.{name} would make the run's outputs {total:,} bytes "
                f"of JSON, over {RUN_SETTING}={self.max_bytes:,}; keep less per run (split it into "
                "several runs, or extract fewer fields) or raise the setting",
            )
