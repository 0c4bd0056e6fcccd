"""Helpers for template tests: load YAML text and get its problems."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from browserq.errors import TemplateInvalid
from browserq.templates import LoadedTemplate, load_template_text


@pytest.fixture
def load() -> Callable[..., LoadedTemplate]:
    """Load dedented YAML text, expecting it to be valid."""

    def _load(text: str, **limits: Any) -> LoadedTemplate:
        return load_template_text(textwrap.dedent(text), "test.yaml", **limits)

    return _load


@pytest.fixture
def problems() -> Callable[..., list[str]]:
    """Load dedented YAML text, expecting TemplateInvalid; return its problem lines."""

    def _problems(text: str, **limits: Any) -> list[str]:
        with pytest.raises(TemplateInvalid) as info:
            load_template_text(textwrap.dedent(text), "test.yaml", **limits)
        assert info.value.source == "test.yaml"
        return info.value.problems

    return _problems
