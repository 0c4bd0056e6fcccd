"""Keeping secret parameter values out of everything browserq writes.

A :class:`Redactor` knows the secret values of one run and scrubs them — in clear, JSON-escaped
and URL-encoded forms — from step inputs, outputs, error messages, logs, DOM snapshots, console and
network captures, and from every member of a Playwright trace zip (traces record ``fill()`` values
and DOM snapshots in clear, microsoft/playwright#19992).
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

#: Secrets shorter than this are masked only where a whole value equals them: scrubbing "ab" out
#: of every page would destroy the captures without protecting anything.
MIN_SCRUB_LENGTH = 4


def mask(name: str) -> str:
    return f"[secret:{name}]"


class Redactor:
    def __init__(self, secrets: Mapping[str, Any] | None = None) -> None:
        self._exact: dict[str, str] = {}
        self._forms: list[tuple[str, str]] = []
        for name, value in (secrets or {}).items():
            if value is None or value == "":
                continue
            text = str(value)
            self._exact[text] = mask(name)
            if len(text) >= MIN_SCRUB_LENGTH:
                for form in _encoded_forms(text):
                    self._forms.append((form, mask(name)))
        # Longest first, so a secret that contains another is masked whole.
        self._forms.sort(key=lambda pair: len(pair[0]), reverse=True)
        self._byte_forms = [(f.encode(), m.encode()) for f, m in self._forms]

    def __bool__(self) -> bool:
        return bool(self._exact)

    def text(self, value: str) -> str:
        if value in self._exact:
            return self._exact[value]
        for form, replacement in self._forms:
            if form in value:
                value = value.replace(form, replacement)
        return value

    def data(self, value: Any) -> Any:
        """Scrub every string inside a JSON-like structure (dict keys included)."""
        if not self:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value

    def bytes(self, value: bytes) -> bytes:
        for form, replacement in self._byte_forms:
            if form in value:
                value = value.replace(form, replacement)
        return value

    def zip_file(self, path: Path) -> None:
        """Rewrite a zip (a Playwright trace) with every member scrubbed."""
        if not self._byte_forms:
            return
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".zip.tmp")
        os.close(fd)
        try:
            with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
                for info in src.infolist():
                    dst.writestr(info, self.bytes(src.read(info)))
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


def _encoded_forms(text: str) -> Iterable[str]:
    forms = {
        text,
        json.dumps(text)[1:-1],  # as it appears inside a JSON string
        quote(text, safe=""),
        quote_plus(text, safe=""),
        quote(text),
    }
    return [f for f in forms if f]
