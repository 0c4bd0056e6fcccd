"""YAML text → a validated :class:`LoadedTemplate`, or one ``TemplateInvalid`` listing everything.

The body and its hash travel with the template so a run can record exactly what it executed.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from browserq.errors import TemplateInvalid, TemplateNotFound
from browserq.templates.checks import check_template
from browserq.templates.fields import MAX_NAME_LENGTH, SEMVER, SLUG
from browserq.templates.messages import describe, pydantic_problems
from browserq.templates.model import Template
from browserq.templates.source import (
    NodeIndex,
    Problem,
    YamlSyntaxError,
    format_location,
    parse_yaml,
)

DEFAULT_MAX_SELECTOR_LENGTH = 1000
DEFAULT_MAX_REPEAT = 1000
#: Largest template file (or text). Real templates are a few KB; this keeps a stray dump or log
#: in the templates directory from being parsed on every lookup.
MAX_TEMPLATE_BYTES = 1 << 20
#: ``name:`` / ``version:`` at the top level, read from the text when the YAML cannot be parsed.
_TOP_LEVEL = re.compile(r"^(name|version)[ \t]*:[ \t]*['\"]?([^'\"#\s]+)", re.MULTILINE)


@dataclass(frozen=True)
class LoadedTemplate:
    """A valid template plus the exact text it came from."""

    template: Template
    body: str
    #: sha256 of the exact text (the stored body is keyed by it).
    content_hash: str
    source: str
    #: sha256 of the canonical body: what the file means, ignoring comments, layout and key order.
    #: A ``name@version`` is pinned to it by its first run (see ``store.templates.save_template``).
    canonical_hash: str = ""

    @property
    def name(self) -> str:
        return self.template.name

    @property
    def version(self) -> str:
        return self.template.version

    @property
    def ref(self) -> str:
        return f"{self.template.name}@{self.template.version}"


def content_hash(body: str) -> str:
    """sha256 hex of the template text, as stored with each run."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _plain(value: Any) -> Any:
    """``value`` as JSON-able data, keeping what YAML can say that JSON cannot (typed keys, sets,
    dates, binary) distinct, so two different documents never share a canonical body."""
    if isinstance(value, dict):
        return {
            (key if isinstance(key, str) else f"\x00{type(key).__name__}:{key!r}"): _plain(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, set | frozenset):
        return {"\x00set": sorted(repr(item) for item in value)}
    if isinstance(value, datetime.date):  # datetime too
        return {"\x00" + type(value).__name__: value.isoformat()}
    if isinstance(value, bytes):
        return {"\x00binary": base64.b64encode(value).decode("ascii")}
    return value


def canonical_body(data: Any) -> str:
    """The parsed template as JSON with sorted keys: its meaning, not its layout or comments."""
    return json.dumps(_plain(data), sort_keys=True, separators=(",", ":"))


def canonical_hash(text: str) -> str:
    """sha256 hex of a template text's canonical body (the text must parse)."""
    data, _root = parse_yaml(text)
    return _hash_data(data)


def _hash_data(data: Any) -> str:
    return hashlib.sha256(canonical_body(data).encode("utf-8")).hexdigest()


def _hints(data: Any, text: str) -> tuple[str | None, str | None]:
    """What a broken template says its name and version are: from the data when it parsed, else
    from top-level ``name:``/``version:`` lines. Only well-formed values count."""
    found: dict[str, Any] = {}
    if isinstance(data, dict):
        found = {key: data.get(key) for key in ("name", "version")}
    else:
        for match in _TOP_LEVEL.finditer(text[:MAX_TEMPLATE_BYTES]):
            found.setdefault(match.group(1), match.group(2))
    name, version = found.get("name"), found.get("version")
    ok_name = isinstance(name, str) and len(name) <= MAX_NAME_LENGTH and SLUG.match(name)
    ok_version = isinstance(version, str) and SEMVER.match(version)
    return (name if ok_name else None), (version if ok_version else None)


def _invalid(source: str, problems: list[str], data: Any, text: str) -> TemplateInvalid:
    name, version = _hints(data, text)
    return TemplateInvalid(source, problems, name=name, version=version)


def load_template_text(
    text: str,
    source: str = "<string>",
    *,
    max_selector_length: int = DEFAULT_MAX_SELECTOR_LENGTH,
    max_repeat: int = DEFAULT_MAX_REPEAT,
) -> LoadedTemplate:
    """Parse and check a template; ``TemplateInvalid(source, problems)`` lists every problem
    (with the name and version the text declares, when they can be read)."""
    if len(text) > MAX_TEMPLATE_BYTES:
        problem = f"the template is {len(text):,} characters; the limit is {MAX_TEMPLATE_BYTES:,}"
        raise _invalid(source, [problem], None, text)
    try:
        data, root = parse_yaml(text)
    except YamlSyntaxError as exc:
        raise _invalid(source, [str(exc)], None, text) from None
    if root is None:
        raise TemplateInvalid(
            source,
            ["line 1: the template is empty; expected a mapping with name, version and steps"],
        )
    index = NodeIndex(root)
    if not isinstance(data, dict):
        message = (
            f"line {root.start_mark.line + 1}: the top level must be a mapping with name, "
            f"version and steps, got {describe(data)}"
        )
        raise _invalid(source, [message], None, text)
    problems: list[Problem] = [
        Problem(line, format_location(loc), message)
        for loc, line, message in index.duplicate_keys()
    ]
    template: Template | None = None
    try:
        template = Template.model_validate(data)
    except ValidationError as exc:
        problems += pydantic_problems(exc, index, data, max_repeat=max_repeat)
    problems += check_template(
        data, index, max_selector_length=max_selector_length, max_repeat=max_repeat
    )
    if problems or template is None:
        ordered = sorted(set(problems))
        raise _invalid(source, [str(p) for p in ordered], data, text)
    return LoadedTemplate(
        template=template,
        body=text,
        content_hash=content_hash(text),
        source=source,
        canonical_hash=_hash_data(data),
    )


def load_template_file(
    path: str | Path,
    *,
    max_selector_length: int = DEFAULT_MAX_SELECTOR_LENGTH,
    max_repeat: int = DEFAULT_MAX_REPEAT,
) -> LoadedTemplate:
    """Load a template file; problems are reported against the file's path."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_TEMPLATE_BYTES:
            with path.open("rb") as head:
                start = head.read(4096).decode("utf-8", "replace")
            problem = f"the file is {size:,} bytes; templates are limited to {MAX_TEMPLATE_BYTES:,}"
            raise _invalid(str(path), [problem], None, start)
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TemplateNotFound(f"template file {path} does not exist") from None
    except OSError as exc:
        raise TemplateInvalid(str(path), [f"cannot read the file: {exc.strerror or exc}"]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"the file is not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise _invalid(str(path), [problem], None, raw.decode("utf-8", "replace")) from None
    return load_template_text(
        text, str(path), max_selector_length=max_selector_length, max_repeat=max_repeat
    )
