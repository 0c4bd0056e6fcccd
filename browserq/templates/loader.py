"""YAML text → a validated :class:`LoadedTemplate`, or one ``TemplateInvalid`` listing everything.

The body and its hash travel with the template so a run can record exactly what it executed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from browserq.errors import TemplateInvalid, TemplateNotFound
from browserq.templates.checks import check_template
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


@dataclass(frozen=True)
class LoadedTemplate:
    """A valid template plus the exact text it came from."""

    template: Template
    body: str
    content_hash: str
    source: str

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


def load_template_text(
    text: str,
    source: str = "<string>",
    *,
    max_selector_length: int = DEFAULT_MAX_SELECTOR_LENGTH,
    max_repeat: int = DEFAULT_MAX_REPEAT,
) -> LoadedTemplate:
    """Parse and check a template; ``TemplateInvalid(source, problems)`` lists every problem."""
    try:
        data, root = parse_yaml(text)
    except YamlSyntaxError as exc:
        raise TemplateInvalid(source, [str(exc)]) from None
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
        raise TemplateInvalid(source, [message])
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
        raise TemplateInvalid(source, [str(p) for p in ordered])
    return LoadedTemplate(
        template=template, body=text, content_hash=content_hash(text), source=source
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
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TemplateNotFound(f"template file {path} does not exist") from None
    except OSError as exc:
        raise TemplateInvalid(str(path), [f"cannot read the file: {exc.strerror or exc}"]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TemplateInvalid(
            str(path), [f"the file is not UTF-8 text ({exc.reason} at byte {exc.start})"]
        ) from None
    return load_template_text(
        text, str(path), max_selector_length=max_selector_length, max_repeat=max_repeat
    )
