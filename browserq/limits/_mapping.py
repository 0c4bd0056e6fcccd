"""Reading ``name → value`` settings given as a mapping, a JSON object or ``a=b; c=d`` pairs."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any


def read_mapping(
    value: Mapping[str, Any] | str | None,
    *,
    what: str,
    pair: str,
    example: str,
    error: type[Exception],
    separators: str = ";\n",
) -> Mapping[str, Any]:
    """The raw mapping (values not yet validated); ``error`` names ``what`` and how to write it."""
    if value is None:
        return {}
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise error(f"{what}: invalid JSON ({exc.msg} at char {exc.pos})") from None
            if not isinstance(value, dict):
                raise error(f"{what}: expected a JSON object of {pair.replace('=', ' to ')}")
        else:
            pairs: dict[str, Any] = {}
            for part in filter(None, (p.strip() for p in re.split(f"[{separators}]", text))):
                key, sep, item = part.partition("=")
                if not sep:
                    raise error(f"{what}: {part!r} is not {pair} (e.g. {example!r})")
                pairs[key.strip()] = item.strip()
            value = pairs
    if not isinstance(value, Mapping):
        raise error(f"{what}: expected a mapping of {pair.replace('=', ' to ')}, got {type(value).__name__}")
    return value
